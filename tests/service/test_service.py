"""The lesson lifecycle in the service, on a real SQLite file: versions, recurrence,
optimistic concurrency, TTL, archive, hard delete, purge."""

from __future__ import annotations

import hashlib
import json

import pytest
from tests.conftest import dump_text

from lorestore.auth.actor import local_actor
from lorestore.core.errors import LorestoreError
from lorestore.core.normalise import value_digest
from lorestore.core.owner import Owner
from lorestore.models import (
    ChangeParams,
    DeleteParams,
    ListParams,
    NoParams,
    PurgeParams,
    ReadParams,
    SearchParams,
    WriteParams,
)
from lorestore.service import LessonService
from lorestore.storage.protocol import Tombstone
from lorestore.storage.sqlite import SQLiteStore

S = "repo::acme/app"


def write(
    service: LessonService,
    value: str,
    *,
    key: str = "k",
    session: str = "s1",
    scope: str = S,
    **extra: object,
):  # type: ignore[no-untyped-def]
    return service.memory_write(
        local_actor(session=session), WriteParams(scope=scope, key=key, value=value, **extra)
    )


def read(service: LessonService, key: str = "k", scope: str = S, **extra: object):  # type: ignore[no-untyped-def]
    return service.memory_read(local_actor(), ReadParams(scope=scope, key=key, **extra)).lesson


def error_code(fn, *args) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(LorestoreError) as err:
        fn(*args)
    return err.value.code


def test_create_is_version_one_candidate(service: LessonService) -> None:
    result = write(service, "Use the local Postgres", tags=["DB"])
    assert result.result == "created"
    assert (result.lesson.version, result.lesson.trust, result.lesson.seen_count) == (
        1,
        "candidate",
        1,
    )
    assert result.lesson.tags == ["db"]
    assert result.lesson.owner == Owner.user("local")
    assert read(service) == result.lesson


def test_same_normalised_value_is_seen_not_a_new_version(service: LessonService) -> None:
    write(service, "Use the local Postgres", session="a")
    again = write(service, "  use the LOCAL   postgres", session="a")
    assert again.result == "seen"
    assert again.lesson.seen_count == 1  # the same session does not count twice
    other = write(service, "Use the local Postgres", session="b")
    assert (other.result, other.lesson.seen_count, other.lesson.version) == ("seen", 2, 1)
    assert other.lesson.value == "Use the local Postgres"  # stored text is never rewritten
    history = service.memory_history(local_actor(), ReadParams(scope=S, key="k"))
    assert len(history.versions) == 1


def test_new_tags_on_a_seen_write_are_recorded_in_the_audit(service: LessonService) -> None:
    """Tags are not versioned: a write of the same value with other tags is ``seen`` and takes
    the new tags, and its audit event records the change as digests (the append-only log
    keeps no content a hard delete must erase)."""
    write(service, "Use the local Postgres", tags=["db"])
    again = write(service, "Use the local Postgres", tags=["db", "tests"], session="s2")
    assert (again.result, again.lesson.tags) == ("seen", ["db", "tests"])
    same = write(service, "Use the local Postgres", tags=["db", "tests"], session="s3")
    events = service.memory_audit(local_actor(), _audit(key="k")).events
    assert [e.action for e in events] == ["write.seen", "write.seen", "write.created"]
    digest = lambda tags: hashlib.sha256(json.dumps(tags).encode()).hexdigest()  # noqa: E731
    assert events[1].detail["tags"] == {"before": digest(["db"]), "after": digest(["db", "tests"])}
    assert "tests" not in json.dumps([e.detail for e in events])
    assert "tags" not in events[0].detail and same.lesson.tags == ["db", "tests"]  # control


def test_recurrence_corroborates_at_three_sessions(service: LessonService) -> None:
    for session in ("a", "b"):
        assert write(service, "same lesson", session=session).lesson.trust == "candidate"
    assert write(service, "same lesson", session="c").lesson.trust == "corroborated"
    # Reading, listing and searching never change trust.
    for _ in range(5):
        read(service)
        service.memory_search(local_actor(), SearchParams(query="lesson", scopes=[S]))
    assert read(service).trust == "corroborated"


def test_a_value_that_comes_back_counts_its_sessions_afresh(service: LessonService) -> None:
    """A -> B -> A: the sessions that wrote A the first time count again for version 3."""
    write(service, "A", session="s1")
    assert write(service, "A", session="s2").lesson.seen_count == 2
    assert (write(service, "B", session="s3").lesson.version, read(service).seen_count) == (2, 1)
    back = write(service, "A", session="s1").lesson
    assert (back.version, back.seen_count, back.trust) == (3, 1, "candidate")
    again = write(service, "A", session="s1")
    assert (again.result, again.lesson.seen_count) == ("seen", 1)  # control: no double count
    second = write(service, "A", session="s2")
    assert (second.result, second.lesson.seen_count, second.lesson.trust) == (
        "seen",
        2,
        "candidate",
    )
    third = write(service, "A", session="s3").lesson
    assert (third.seen_count, third.trust, third.version) == (3, "corroborated", 3)
    assert read(service).seen_count == 3


def test_new_value_makes_a_new_version_and_keeps_the_old(service: LessonService, clock) -> None:  # type: ignore[no-untyped-def]
    v1 = write(service, "first").lesson
    clock.advance(hours=1)
    v2 = write(service, "second").lesson
    assert v2.version == 2 and v2.id == v1.id and v2.created_at == v1.created_at
    assert v2.recorded_at > v1.recorded_at
    history = service.memory_history(local_actor(), ReadParams(scope=S, key="k")).versions
    assert [(v.version, v.value) for v in history] == [(1, "first"), (2, "second")]
    assert [v.recorded_at for v in history] == [v1.recorded_at, v2.recorded_at]


def test_as_of_reads_what_the_store_said_then(service: LessonService, clock) -> None:  # type: ignore[no-untyped-def]
    clock.advance(days=1)
    write(service, "first")
    between = clock.now.isoformat()
    clock.advance(days=1)
    write(service, "second")
    assert read(service, as_of=between).value == "first"
    assert read(service, as_of=between).version == 1
    assert read(service).value == "second"
    with pytest.raises(LorestoreError) as err:
        read(service, as_of="2025-01-01")
    assert err.value.code == "not_found"
    assert error_code(lambda: read(service, as_of="yesterday")) == "invalid_time"


def test_as_of_reports_trust_and_review_as_they_stood_then(service: LessonService, clock) -> None:  # type: ignore[no-untyped-def]
    """Verifying a lesson later does not make an earlier as_of read claim it was verified."""
    from lorestore.models import DisputeParams, VerifyParams

    write(service, "Use the local Postgres")
    before_review = clock.now.isoformat()
    clock.advance(days=1)
    service.memory_verify(local_actor(), VerifyParams(scope=S, key="k", note="checked"))
    verified_at = clock.now.isoformat()
    clock.advance(days=1)
    service.memory_dispute(local_actor(), DisputeParams(scope=S, key="k", reason="CI moved"))
    then = read(service, as_of=before_review)
    assert (then.trust, then.review) == ("candidate", None)
    assert then.updated_at[:19] == before_review[:19]  # not the later review's time
    at_review = read(service, as_of=verified_at)  # the control: verified then
    assert at_review.trust == "verified" and at_review.review is not None
    assert read(service).trust == "disputed"  # and now


def test_valid_at_picks_the_version_that_held_in_the_world(service: LessonService) -> None:
    write(service, "tests use postgres 14", valid_from="2025-01-01", valid_to="2026-01-01")
    write(service, "tests use postgres 15", valid_from="2026-01-01")
    assert read(service, valid_at="2025-06-01").value == "tests use postgres 14"
    assert read(service, valid_at="2026-06-01").value == "tests use postgres 15"
    assert error_code(lambda: read(service, valid_at="2024-06-01")) == "not_found"
    assert (
        error_code(
            lambda: write(service, "x", key="bad", valid_from="2026-02-01", valid_to="2026-01-01")
        )
        == "invalid_time"
    )


def test_if_version_guards_against_lost_updates(service: LessonService, store) -> None:  # type: ignore[no-untyped-def]
    assert write(service, "v1", if_version=0).result == "created"
    assert error_code(lambda: write(service, "again", if_version=0)) == "version_conflict"
    assert write(service, "v2", if_version=1).lesson.version == 2
    with pytest.raises(LorestoreError) as err:
        write(service, "v3", if_version=1)
    assert err.value.details == {"expected": 1, "actual": 2}
    assert read(service).value == "v2"  # the refused write changed nothing


def test_ttl_sets_keeps_and_clears_expiry(service: LessonService, clock) -> None:  # type: ignore[no-untyped-def]
    first = write(service, "v1", ttl_days=7).lesson
    assert first.expires_at is not None and first.expires_at.startswith("2026-01-08")
    kept = write(service, "v2").lesson
    assert kept.expires_at == first.expires_at
    renewed = write(service, "v3", ttl_days=30).lesson
    assert renewed.expires_at.startswith("2026-01-31")
    cleared = write(service, "v3", clear_ttl=True).lesson
    assert cleared.expires_at is None
    assert error_code(lambda: write(service, "v4", ttl_days=0)) == "invalid_ttl"
    assert (
        error_code(lambda: write(service, "v4", ttl_days=3, clear_ttl=True)) == "invalid_argument"
    )


def test_expired_lessons_are_hidden_and_a_write_must_renew(service: LessonService, clock) -> None:  # type: ignore[no-untyped-def]
    write(service, "short lived postgres note", ttl_days=1)
    write(service, "long lived postgres note", key="other")
    clock.advance(days=2)
    assert error_code(read, service) == "not_found"
    assert read(service, "other").value == "long lived postgres note"  # positive control
    listed = service.memory_list(local_actor(), ListParams(scope=S)).lessons
    assert [lesson.key for lesson in listed] == ["other"]
    hits = service.memory_search(local_actor(), SearchParams(query="postgres", scopes=[S])).hits
    assert [h.lesson.key for h in hits] == ["other"]
    assert error_code(lambda: write(service, "short lived postgres note v2")) == "expired"
    assert write(service, "renewed", ttl_days=5).lesson.expires_at > clock.now.isoformat()
    assert read(service).value == "renewed"


def test_archive_hides_and_keeps_the_address(service: LessonService) -> None:
    write(service, "archived postgres lesson")
    write(service, "kept postgres lesson", key="kept")
    archived = service.memory_archive(local_actor(), ChangeParams(scope=S, key="k")).lesson
    assert archived.status == "archived" and archived.archived_at
    assert error_code(read, service) == "not_found"
    assert read(service, "kept").status == "active"
    assert [x.key for x in service.memory_list(local_actor(), ListParams(scope=S)).lessons] == [
        "kept"
    ]
    # The address stays taken: a write does not silently bring the lesson back.
    assert error_code(lambda: write(service, "archived postgres lesson")) == "archived"
    assert error_code(lambda: write(service, "something else")) == "archived"
    restored = service.memory_restore(local_actor(), ChangeParams(scope=S, key="k")).lesson
    assert restored.status == "active" and restored.archived_at is None
    assert read(service).value == "archived postgres lesson"


def test_hard_delete_erases_every_version(service: LessonService, store) -> None:  # type: ignore[no-untyped-def]
    write(service, "secret v1 hunter2")
    write(service, "secret v2 hunter2")
    write(service, "a neighbour", key="keep")
    result = service.memory_delete(local_actor(), DeleteParams(scope=S, key="k", reason="leak"))
    assert result.versions_erased == 2
    assert error_code(read, service) == "not_found"
    assert (
        error_code(lambda: service.memory_history(local_actor(), ReadParams(scope=S, key="k")))
        == "not_found"
    )
    dump = dump_text(store)
    assert "hunter2" not in dump  # in no table: versions, sessions, audit all erased
    assert "a neighbour" in dump  # positive control: stored values are visible this way
    if isinstance(store, SQLiteStore):
        # Nor in the file's index pages, free pages or WAL.
        data = store.path.read_bytes() + b"".join(
            p.read_bytes() for p in store.path.parent.glob("lorestore.db-*")
        )
        assert b"hunter2" not in data
        assert b"a neighbour" in data
    actions = [e.action for e in service.memory_audit(local_actor(), _audit(key="k")).events]
    assert actions[0] == "delete"
    # The address is free again after a hard delete.
    assert write(service, "fresh").result == "created"


def _audit(**kw):  # type: ignore[no-untyped-def]
    from lorestore.models import AuditParams

    return AuditParams(scope=S, **kw)


def test_purge_erases_only_archived_past_retention(service: LessonService, clock) -> None:  # type: ignore[no-untyped-def]
    for key in ("old", "recent", "active"):
        write(service, f"value {key}", key=key)
    service.memory_archive(local_actor(), ChangeParams(scope=S, key="old"))
    clock.advance(days=40)
    service.memory_archive(local_actor(), ChangeParams(scope=S, key="recent"))
    clock.advance(days=1)
    result = service.memory_purge(local_actor(), PurgeParams(retention_days=30))
    assert result.purged == 1
    history = service.memory_history(local_actor(), ReadParams(scope=S, key="recent"))
    assert history.status == "archived"
    assert read(service, "active").value == "value active"
    assert (
        error_code(lambda: service.memory_history(local_actor(), ReadParams(scope=S, key="old")))
        == "not_found"
    )


def test_purge_erases_ties_in_the_order_they_were_written(service: LessonService, clock) -> None:  # type: ignore[no-untyped-def]
    """Lessons archived in the same instant are erased (and audited) oldest first on both
    backends, not in whatever order the database happens to hold them."""
    ids = [write(service, f"value {key}", key=key).lesson.id for key in "abcd"]
    for key in "cadb":
        service.memory_archive(local_actor(), ChangeParams(scope=S, key=key))
    clock.advance(days=1)
    result = service.memory_purge(local_actor(), PurgeParams(retention_days=0))
    assert result.lesson_ids == ids
    events = service.memory_audit(local_actor(), _audit(limit=4)).events
    assert [e.lesson_id for e in events] == ids[::-1]  # newest event first


def test_purge_expired(service: LessonService, clock) -> None:  # type: ignore[no-untyped-def]
    write(service, "goes", key="goes", ttl_days=1)
    write(service, "stays", key="stays", ttl_days=10)
    clock.advance(days=2)
    assert service.memory_purge_expired(local_actor(), NoParams()).purged == 1
    assert read(service, "stays").value == "stays"
    assert service.memory_purge_expired(local_actor(), NoParams()).purged == 0


def test_tombstoned_value_is_refused_in_any_form_and_narrower_scope(
    service: LessonService, store, clock
) -> None:  # type: ignore[no-untyped-def]
    with store.transaction(write=True, actor="user:local") as tx:
        tx.insert_tombstone(
            Tombstone(
                id="00000000-0000-4000-8000-000000000001",
                owner="user:local",
                scope=S,
                value_digest=value_digest("Disable the flaky test"),
                reason="hides a real race",
                actor="user:reviewer",
                created_at="2026-01-01T00:00:00.000000Z",
            )
        )
    for scope, key, value in [
        (S, "k", "Disable the flaky test"),
        (S, "other-key", "DISABLE  the\tflaky test"),
        ("branch::acme/app::main", "k", "\uff44isable the flaky test"),
        (S, "zero-width", "Disable the fla\u200bky test"),
        (S, "joiner", "Dis\u200dable the \u2060flaky test\ufe0f"),
    ]:
        with pytest.raises(LorestoreError) as err:
            write(service, value, key=key, scope=scope)
        assert err.value.code == "rejected_value"
        assert err.value.details["rejected_by"] == "user:reviewer"
        assert "hides a real race" in err.value.message
    # Positive controls: a different value, and the same value in an unrelated scope.
    assert write(service, "Fix the race in the flaky test").result == "created"
    assert write(service, "Disable the flaky test", scope="repo::acme/other").result == "created"


@pytest.mark.lexical  # what the full-text index splits and folds
@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("conftest", ["tests/conftest.py"]),  # a file name in a key
        ("conftest.py", ["tests/conftest.py"]),
        ("config", ["tag-file"]),  # a file name in a tag
        ("bashrc", ["home-path"]),  # a path that starts with ~/
        ("etc", ["abs-path"]),  # an absolute path
        ("cafe", ["accent"]),  # accents folded, both ways
        ("café", ["accent"]),
        ("σοφος", ["sigma"]),  # the final sigma folded
        ("example", ["address"]),
    ],
)
def test_search_finds_the_same_words_on_both_backends(
    service: LessonService, query: str, found: list[str]
) -> None:
    """What the full-text index splits and folds is alike on both backends: file names and
    paths in keys, tags and text by their parts, accents and the final sigma folded."""
    lessons = {
        "tests/conftest.py": ("fixtures live here", []),
        "tag-file": ("notes", ["next.config.js"]),
        "home-path": ("edit ~/.bashrc first", []),
        "abs-path": ("see /etc/hosts", []),
        "accent": ("I drink café au lait", []),
        "sigma": ("ΣΟΦΟΣ is wise", []),
        "address": ("mail ops@example.com", []),
    }
    for key, (value, tags) in lessons.items():
        write(service, value, key=key, scope="global", tags=tags)
    hits = service.memory_search(local_actor(), SearchParams(query=query, scopes=["global"]))
    assert sorted(h.lesson.key for h in hits.hits) == found


def test_search_breaks_ties_oldest_first_on_both_backends(service: LessonService) -> None:
    """Lessons of equal score come back oldest first on both backends (FTS5's rank order), so
    a limit keeps the same ones."""
    for key in ("a1", "a2", "a3"):
        write(service, "postgres needs vacuum", key=key, scope="global")
    search = SearchParams(query="vacuum", scopes=["global"])
    hits = service.memory_search(local_actor(), search).hits
    assert [h.lesson.key for h in hits] == ["a1", "a2", "a3"]
    first = service.memory_search(local_actor(), search.model_copy(update={"limit": 1}))
    assert [h.lesson.key for h in first.hits] == ["a1"]


def test_search_ranks_by_relevance_and_filters(service: LessonService) -> None:
    write(service, "postgres postgres vacuum settings for postgres", key="pg-heavy", tags=["db"])
    write(service, "a note that mentions postgres once among many other words here", key="pg-light")
    write(service, "docker compose up before running the suite", key="docker", tags=["db"])
    write(service, "postgres in another repo", key="elsewhere", scope="repo::acme/other")
    hits = service.memory_search(local_actor(), SearchParams(query="postgres", scopes=[S])).hits
    assert [h.lesson.key for h in hits] == ["pg-heavy", "pg-light"]
    assert hits[0].score > hits[1].score > 0
    assert "[postgres]" in hits[0].snippet.lower()
    tagged = service.memory_search(
        local_actor(), SearchParams(query="postgres", scopes=[S], tags=["db"])
    )
    assert [h.lesson.key for h in tagged.hits] == ["pg-heavy"]
    both = service.memory_search(
        local_actor(), SearchParams(query="postgres", scopes=[S, "repo::acme/other"])
    )
    assert {h.lesson.key for h in both.hits} == {"pg-heavy", "pg-light", "elsewhere"}
    assert (
        error_code(
            lambda: service.memory_search(local_actor(), SearchParams(query="postgres", scopes=[]))
        )
        == "invalid_scope"
    )
    assert (
        error_code(
            lambda: service.memory_search(local_actor(), SearchParams(query="?!", scopes=[S]))
        )
        == "invalid_argument"
    )
    # Operator words and quotes in a query are words, not FTS5 syntax.
    service.memory_search(local_actor(), SearchParams(query='postgres AND "NOT" NEAR(', scopes=[S]))


def test_list_pages_newest_first_with_a_keyset_cursor(service: LessonService, clock) -> None:  # type: ignore[no-untyped-def]
    for i in range(7):
        clock.advance(seconds=1)
        write(service, f"lesson {i}", key=f"k{i}", tags=["even"] if i % 2 == 0 else ["odd"])
    seen: list[str] = []
    cursor = None
    while True:
        page = service.memory_list(local_actor(), ListParams(scope=S, limit=3, cursor=cursor))
        seen += [lesson.key for lesson in page.lessons]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [f"k{i}" for i in reversed(range(7))]
    even = service.memory_list(local_actor(), ListParams(scope=S, tags=["even"]))
    assert [lesson.key for lesson in even.lessons] == ["k6", "k4", "k2", "k0"]
    assert (
        error_code(
            lambda: service.memory_list(local_actor(), ListParams(scope=S, cursor="garbage"))
        )
        == "invalid_cursor"
    )
    assert (
        error_code(lambda: service.memory_list(local_actor(), ListParams(scope=S, limit=0)))
        == "invalid_argument"
    )


def test_scopes_inventory(service: LessonService, clock) -> None:  # type: ignore[no-untyped-def]
    write(service, "a", key="a")
    write(service, "b", key="b", ttl_days=1)
    write(service, "c", key="c")
    write(service, "g", key="g", scope="global")
    service.memory_archive(local_actor(), ChangeParams(scope=S, key="c"))
    clock.advance(days=2)
    inventory = {
        s.scope: (s.active, s.archived, s.expired)
        for s in service.memory_scopes(local_actor(), NoParams()).scopes
    }
    assert inventory == {S: (1, 1, 1), "global": (1, 0, 0)}


def test_bad_input_never_changes_state(service: LessonService, store) -> None:  # type: ignore[no-untyped-def]
    write(service, "original")
    before = dump_text(store)
    for bad in [
        dict(value="x", scope="repo:acme/app"),
        dict(value="x" * 70_000),
        dict(value="x", key=""),
        dict(value="x", ttl_days=999),
        dict(value="x", tags=["t"] * 40),
        dict(value="x", valid_from="soon"),
        dict(value="x", if_version=7),
    ]:
        kwargs = {"key": "k", "scope": S, **bad}
        with pytest.raises(LorestoreError):
            service.memory_write(local_actor(session="s"), WriteParams(**kwargs))  # type: ignore[arg-type]
    assert dump_text(store) == before


def test_sqlite_records_built_in_sql_equal_the_rows_they_come_from(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # The read paths decode a JSON record that SQL builds (the lesson_docs view), in a short
    # form for the common lesson (optional fields left to the model's defaults) and a full
    # one otherwise; both must give exactly the record the row holds, column by column.
    from tests.portable import import_lines, lesson, line

    from lorestore.models import VerifyParams
    from lorestore.storage.rows import lesson_from_row
    from lorestore.storage.sqlite.dialect import Q, _stored_doc

    store = SQLiteStore(tmp_path / "docs.db")
    service = LessonService(store)
    person = local_actor(session="s1")
    write(service, "A plain lesson.", key="plain")
    write(service, "A plain lesson.", key="plain", session="s2")  # seen twice
    write(service, "Expires.", key="ttl", ttl_days=3)
    write(
        service, "Holds for a while.", key="window", valid_from="2026-01-01", valid_to="2027-01-01"
    )
    write(
        service,
        "Depends on a file.",
        key="deps",
        depends_on=[{"path": "Makefile", "blob": "a" * 40}],
    )
    write(service, "A signal.", key="signal", kind="signal", tags=["ci"])
    write(service, "Reviewed.", key="verified")
    service.memory_verify(person, VerifyParams(scope=S, key="verified", note="checked"))
    write(service, "A new value, proposed.", key="verified")
    write(service, "Archived.", key="archived")
    service.memory_archive(person, ChangeParams(scope=S, key="archived"))
    import_lines(service, [line(lesson("ext", "With extension fields", x_tool={"n": 1}))])
    try:
        with store.transaction(write=False) as tx:
            conn = tx._conn
            table = {r["pk"]: lesson_from_row(r) for r in conn.execute("SELECT * FROM lessons")}
            rows = conn.execute(
                "SELECT pk, value_digest, pending_version, doc FROM lesson_docs"
            ).fetchall()
        decoded = {r["pk"]: _stored_doc(r).lesson for r in rows}
        short_forms = [r["pk"] for r in rows if '"valid_from"' not in r["doc"]]
        assert len(table) == 8 and "lesson_docs" in Q["lesson_docs"]
        assert 0 < len(short_forms) < len(rows)  # both forms of the record are exercised
        assert decoded == table
        assert {pk: d.model_dump() for pk, d in decoded.items()} == {
            pk: t.model_dump() for pk, t in table.items()
        }
    finally:
        store.close()


def test_a_sighting_with_another_window_is_refused_not_dropped(service: LessonService) -> None:
    first = write(
        service, "Deploys freeze on Fridays", valid_from="2020-01-01", valid_to="2030-01-01"
    )
    window = (first.lesson.valid_from, first.lesson.valid_to)
    for bounds in ({"valid_to": "2021-01-01"}, {"valid_from": "2019-01-01"}):
        with pytest.raises(LorestoreError) as err:
            write(service, "deploys freeze on fridays", session="s-2", **bounds)
        assert err.value.code == "invalid_argument"
        assert "archive" in (err.value.hint or "")
        lesson = read(service)
        assert (lesson.version, lesson.seen_count) == (1, first.lesson.seen_count)
        assert (lesson.valid_from, lesson.valid_to) == window
    # Positive controls: the same window, or none, is a sighting; a new value takes a window.
    seen = write(service, "Deploys freeze on Fridays", session="s-3", valid_to="2030-01-01")
    assert seen.result == "seen" and (seen.lesson.valid_from, seen.lesson.valid_to) == window
    assert write(service, "Deploys freeze on Fridays", session="s-4").result == "seen"
    updated = write(service, "Deploys freeze on Fridays until 2021", valid_to="2021-01-01")
    assert updated.result == "updated" and updated.lesson.valid_to.startswith("2021-01-01")
    # A proposal for a verified lesson, repeated with another window, is refused alike.
    from lorestore.models import VerifyParams

    service.memory_verify(local_actor(), VerifyParams(scope=S, key="k"))
    proposed = write(service, "Deploys freeze on Thursdays", valid_from="2024-01-01")
    assert proposed.result == "proposed"
    with pytest.raises(LorestoreError) as moved:
        write(service, "Deploys freeze on Thursdays", valid_from="2025-06-01")
    assert moved.value.code == "invalid_argument"
    same = write(service, "Deploys freeze on Thursdays", valid_from="2024-01-01")
    assert same.result == "proposed"  # the control


def test_as_of_at_a_versions_own_time_reports_the_lesson_as_it_was(store) -> None:  # type: ignore[no-untyped-def]
    """A clock that moves between every reading (as a real one does): the write's audit event
    carries the version's time, so an as_of read at that time finds its trust; a revision
    proposed later is not reported pending then."""
    from datetime import UTC, datetime, timedelta

    from lorestore.models import VerifyParams

    ticks = iter(range(10_000))
    start = datetime(2026, 3, 1, tzinfo=UTC)
    service = LessonService(store, clock=lambda: start + timedelta(milliseconds=next(ticks)))
    first = write(service, "Use the local Postgres")
    service.memory_verify(local_actor(), VerifyParams(scope=S, key="k"))
    assert write(service, "Use the Postgres container").result == "proposed"
    then = read(service, as_of=first.lesson.recorded_at)
    assert (then.trust, then.pending_revision) == ("candidate", False)
    now = read(service)  # the control: as it stands
    assert (now.trust, now.pending_revision) == ("verified", True)
