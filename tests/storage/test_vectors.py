"""Vectors in the store, on both backends: every write of a lesson row (create, new version,
accepted revision, import) keeps the served text's vector with the model's name and version;
a hard delete erases it; a vector of another model is found and re-embedded; a store with
semantic retrieval switched off writes none. The vectors are read back as the application
(on PostgreSQL the app role under row-level security)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from tests.conftest import app_connection, operator_store
from tests.pg import Template
from tests.portable import LOCAL, header, import_lines, lesson, line

from lorestore.auth.actor import local_actor
from lorestore.core.errors import LorestoreError
from lorestore.models import (
    ChangeParams,
    DeleteParams,
    ExplainParams,
    RecallParams,
    VerifyParams,
    WriteParams,
)
from lorestore.semantic.index import pack
from lorestore.semantic.model import (
    DIMENSIONS,
    MODEL_NAME,
    Embedder,
    _package_version,
    availability,
)
from lorestore.service import LessonService
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.protocol import Store
from lorestore.storage.sqlite import SQLiteStore

SCOPE = "repo::acme/app"


def vectors(store: Store) -> dict[str, tuple[str, str, bytes]]:
    """key -> (model, model_version, vector) of every lesson vector the app may read."""
    query = (
        "SELECT l.key, v.model, v.model_version, v.vector FROM lesson_vectors AS v "
        "JOIN lessons AS l ON l.pk = v.lesson_pk"
    )
    with app_connection(store) as conn:
        rows: list[Any] = conn.execute(query).fetchall()
    return {r[0]: (r[1], r[2], bytes(r[3])) for r in rows}


def write(service: LessonService, key: str, value: str, scope: str = SCOPE) -> None:
    service.memory_write(LOCAL, WriteParams(scope=scope, key=key, value=value))


def test_every_write_path_keeps_the_served_texts_vector(
    service: LessonService, store: Store
) -> None:
    write(service, "pg", "Integration tests need the local Postgres on port 5432.")
    first = vectors(store)["pg"]
    assert first[:2] == (MODEL_NAME, store.vectors.version)  # type: ignore[attr-defined]
    assert len(first[2]) == DIMENSIONS  # int8: one byte a component
    write(service, "pg", "Deploys go out on Fridays through the release pipeline.")
    second = vectors(store)["pg"]
    assert second[2] != first[2]  # the new version's text
    # A verified lesson's new value is a proposal: the served (verified) text keeps its vector
    # until a reviewer accepts the revision.
    service.memory_verify(LOCAL, VerifyParams(scope=SCOPE, key="pg"))
    write(service, "pg", "The cache is warmed by a cron job every night.")
    assert vectors(store)["pg"] == second
    service.memory_verify(LOCAL, VerifyParams(scope=SCOPE, key="pg", revision=True))
    accepted = vectors(store)["pg"]
    assert accepted[2] not in (first[2], second[2])
    # Import: a lesson that lands gets its vector in the same batch.
    imported = import_lines(service, [header(), line(lesson("ruff", "Run ruff format first."))])
    assert imported.lessons.added == 1
    assert set(vectors(store)) == {"pg", "ruff"}
    # A hard delete erases the vector with the text it was made from.
    service.memory_delete(LOCAL, DeleteParams(scope=SCOPE, key="ruff", reason="wrong"))
    assert set(vectors(store)) == {"pg"}


def test_a_write_that_keeps_the_text_keeps_the_vector_row(
    service: LessonService, store: Store
) -> None:
    write(service, "pg", "Integration tests need the local Postgres on port 5432.")
    with app_connection(store) as conn:
        before = conn.execute("SELECT generation FROM lesson_vectors").fetchall()
    # Archived and restored, seen again by another session: the row is saved, the text kept.
    service.memory_archive(LOCAL, ChangeParams(scope=SCOPE, key="pg"))
    service.memory_restore(LOCAL, ChangeParams(scope=SCOPE, key="pg"))
    again = WriteParams(
        scope=SCOPE, key="pg", value="Integration tests need the local Postgres on port 5432."
    )
    assert service.memory_write(local_actor(session="s2"), again).lesson.seen_count == 2
    with app_connection(store) as conn:
        after = conn.execute("SELECT generation FROM lesson_vectors").fetchall()
    assert before == after  # the same vector: not rewritten, no cache re-reads it


def test_another_models_vector_is_re_embedded(service: LessonService, store: Store) -> None:
    write(service, "pg", "Integration tests need the local Postgres on port 5432.")
    write(service, "ruff", "Run ruff format before every commit.")
    current = vectors(store)
    with store.transaction(write=False, actor=LOCAL.principal) as tx:
        assert tx.count_lessons_to_embed() == 0  # the control: nothing to do
    with app_connection(store) as conn:
        conn.execute(
            "UPDATE lesson_vectors SET model_version = '0.3.0', vector = %s "
            "WHERE lesson_pk = (SELECT pk FROM lessons WHERE key = 'pg')".replace(
                "%s", "?" if isinstance(store, SQLiteStore) else "%s"
            ),
            [bytes(DIMENSIONS)],
        )
    with store.transaction(write=False, actor=LOCAL.principal) as tx:
        assert tx.count_lessons_to_embed() == 1
    with operator_store(store) as operator, operator.transaction(write=True) as tx:
        assert tx.embed_page(0, 100)[0] == 1
    assert vectors(store) == current
    with operator_store(store) as operator, operator.transaction(write=True) as tx:
        assert tx.embed_page(0, 100)[0] == 0  # idempotent


def test_switched_off_no_vector_is_written_and_recall_says_lexical(home: Path) -> None:
    _package_version.cache_clear()
    store = SQLiteStore(home / "lexical.db", semantic=False)
    try:
        service = LessonService(store)
        write(service, "pg", "Integration tests need the local Postgres on port 5432.")
        assert vectors(store) == {}
        result = service.memory_recall(LOCAL, RecallParams(repo="acme/app", task="postgresql"))
        assert result.context.retrieval == "lexical: switched off (LORESTORE_SEMANTIC=off)"
        explained = service.memory_explain(LOCAL, ExplainParams(recall_id=result.recall_id))
        assert explained.context["retrieval"] == result.context.retrieval
        with store.transaction(write=False) as tx:
            assert tx.retrieval_model() is None and tx.count_lessons_to_embed() == 0
        # Nor was the package's metadata read (25-75 ms of a hook's start): the model's
        # version is asked for only where it can run, as the control shows.
        assert _package_version.cache_info().currsize == 0
        assert availability(True).version == Embedder(_package_version()).version
        assert _package_version.cache_info().currsize == 1
    finally:
        store.close()


def test_opening_a_store_reads_no_package_metadata(home: Path) -> None:
    """The model's version comes from its package's metadata (a scan of site-packages): read
    where a vector is written or compared, not by every process that opens a store with the
    extra switched on (a `read`, `lorestore mcp` before its handshake)."""
    from lorestore.models import ReadParams

    store = SQLiteStore(home / "semantic.db")
    try:
        _package_version.cache_clear()
        assert store.vectors is not None  # the extra is on: vectors are kept here
        service = LessonService(store)
        with pytest.raises(LorestoreError, match="no active lesson"):
            service.memory_read(LOCAL, ReadParams(scope=SCOPE, key="pg"))
        assert _package_version.cache_info().currsize == 0
        write(service, "pg", "Integration tests need the local Postgres on port 5432.")
        assert _package_version.cache_info().currsize == 1  # the control: a vector written
        (model_version,) = {version for _, version, _ in vectors(store).values()}
        assert model_version == _package_version()
    finally:
        store.close()


@pytest.mark.parametrize("later", ["new lesson", "new version"])
def test_recall_sees_vectors_written_after_its_index_was_built(
    service: LessonService, later: str
) -> None:
    """The process's index of a rung is brought up to date by generation on every recall."""
    write(service, "deploy", "Deploys go out on Fridays through the release pipeline.")
    task = "spreadsheet export"  # no word in common with the lesson
    first = service.memory_recall(LOCAL, RecallParams(repo="acme/app", task=task))
    assert first.context.retrieval and first.context.retrieval.startswith("hybrid:")
    assert not any(r.startswith("relevance:") for r in first.offered[0].reasons)
    if later == "new lesson":
        write(service, "reports", "Reports are written as CSV files for Excel.")
    else:
        write(service, "deploy", "Reports are written as CSV files for Excel.")
    second = service.memory_recall(LOCAL, RecallParams(repo="acme/app", task=task))
    best = second.offered[0]
    assert best.lesson.value.startswith("Reports are written")
    assert any(r.startswith("relevance:") for r in best.reasons)


def test_a_vector_committed_late_is_not_skipped_on_postgres(
    pg_template: Template, pg_database: str
) -> None:
    """A process's index reads a rung from the oldest transaction still running at its last
    read (PostgreSQL assigns generations in start order, commits land in any order): a vector
    whose writer committed after a later writer, and after a recall, is still read."""
    store = PostgresStore(pg_template.app_url(pg_database), max_size=4)
    try:
        service = LessonService(store)
        write(service, "reports", "Reports are written as CSV files for Excel.")
        model = Embedder(store.vectors.version)  # type: ignore[union-attr]
        near, far = pack(model.embed(["Reports are written as CSV files for Excel.", "Fridays"]))
        task = RecallParams(repo="acme/app", task="spreadsheet export")
        set_vector = (
            "UPDATE lesson_vectors SET vector = %s, "
            "generation = pg_current_xact_id()::text::bigint "
            "WHERE lesson_pk = (SELECT pk FROM lessons WHERE key = 'reports')"
        )
        with app_connection(store) as conn:
            conn.execute(set_vector, [far])  # committed: the lesson now looks unrelated
        with app_connection(store) as late:
            late.execute("BEGIN")
            late.execute(set_vector, [near])  # the true vector, not committed yet
            write(service, "deploy", "Deploys go out on Fridays.")  # a later writer commits
            before = service.memory_recall(LOCAL, task)
            assert not any(r.startswith("relevance:") for r in before.offered[0].reasons)
            late.execute("COMMIT")
        after = service.memory_recall(LOCAL, task)
        assert after.offered[0].lesson.key == "reports"
        assert any(r.startswith("relevance:") for r in after.offered[0].reasons)
    finally:
        store.close()


def test_a_model_that_fails_to_load_leaves_the_store_lexical_not_broken(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broken install of the extra does not refuse writes or recalls: the process runs
    lexically, says why, and `reindex` (once the model loads again) embeds what was missed."""
    from lorestore.semantic import model

    def fail() -> None:
        raise RuntimeError("weights truncated")

    with monkeypatch.context() as broken:
        broken.setattr(model, "_loaded", [])  # this process's model, as if never loaded
        broken.setattr(model, "_load", fail)
        store = SQLiteStore(home / "broken.db")
        service = LessonService(store)
        write(service, "reports", "Reports are written as CSV files for Excel.")
        result = service.memory_recall(LOCAL, RecallParams(repo="acme/app", task="csv"))
        assert [o.lesson.key for o in result.offered] == ["reports"]
        assert result.context.retrieval == (
            "lexical: the semantic model did not load (RuntimeError: weights truncated)"
        )
        assert vectors(store) == {}
        store.close()
    store = SQLiteStore(home / "broken.db")  # the control: the model loads again
    try:
        with store.transaction(write=True) as tx:
            assert tx.count_lessons_to_embed() == 1 and tx.embed_page(0, 10)[0] == 1
        assert set(vectors(store)) == {"reports"}
    finally:
        store.close()


def test_postgres_keeps_each_tenants_vectors_to_itself(
    pg_template: Template, pg_database: str
) -> None:
    """Row-level security on lesson_vectors, as the app role: another user reads none of a
    user's vectors (the user reads them: the control), and nobody may delete one directly
    (a lesson's delete cascades)."""
    store = PostgresStore(pg_template.app_url(pg_database), max_size=2)
    try:
        service = LessonService(store)
        write(service, "reports", "Reports are written as CSV files for Excel.")
        LessonService(store).memory_write(
            local_actor(principal="user:mallory"),
            WriteParams(scope=SCOPE, key="theirs", value="Spreadsheets go out as CSV."),
        )
        query = "SELECT l.key FROM lesson_vectors AS v JOIN lessons AS l ON l.pk = v.lesson_pk"
        for actor, keys in (("user:local", ["reports"]), ("user:mallory", ["theirs"])):
            with app_connection(store, actor) as conn:
                assert [r[0] for r in conn.execute(query).fetchall()] == keys
        with app_connection(store, "user:mallory") as conn:
            bare = "SELECT count(*) FROM lesson_vectors WHERE owner = 'user:local'"
            assert conn.execute(bare).fetchone()[0] == 0
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("DELETE FROM lesson_vectors")
    finally:
        store.close()
