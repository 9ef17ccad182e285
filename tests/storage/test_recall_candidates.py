"""Recall's candidates: the full-text pass ranks only the ladder's matches, each rung with its
own owner (a busier scope elsewhere cannot crowd them out), and on SQLite the recall_lessons
table it looks matches up in (the recall_create_addresses migration) follows every write path
and is filled when an older store migrates."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.portable import export_lines, import_lines

from lorestore.auth.actor import local_actor
from lorestore.core.owner import Owner
from lorestore.models import (
    ChangeParams,
    DeleteParams,
    DisputeParams,
    ExplainParams,
    NoParams,
    OrgBindParams,
    OrgCreateParams,
    RecallParams,
    RejectParams,
    VerifyParams,
    WriteParams,
)
from lorestore.service import LessonService
from lorestore.storage.sqlite import SQLiteStore

PERSON = local_actor(session="s")
REPO = "repo::example/app"
ELSEWHERE = "project::busy"
TASK = "fix the flaky pagination cursor"


def write(service: LessonService, scope: str, key: str, value: str) -> None:
    service.memory_write(PERSON, WriteParams(scope=scope, key=key, value=value))


def recall(service: LessonService, **context: object) -> dict[str, list[str]]:
    result = service.memory_recall(
        PERSON, RecallParams(repo="example/app", task=TASK, budget=20_000, **context)
    )
    return {
        "offered": [o.lesson.key for o in result.offered],
        "matched": [
            o.lesson.key
            for o in result.offered
            if any(r.startswith("relevance:") for r in o.reasons)
        ],
        "held": [h.key for h in result.held],
    }


def test_matches_in_other_scopes_never_crowd_out_the_ladder(service: LessonService) -> None:
    # 120 lessons that match the task far better than the ladder's, in a scope off the
    # ladder: a pass that ranked every match and kept the ladder's afterwards would fill its
    # 50 candidates (25 a rung, two rungs) with them and find none of the ladder's.
    for i in range(120):
        write(service, ELSEWHERE, f"busy-{i}", "flaky pagination cursor: flaky, flaky cursor.")
    write(service, REPO, "cursor", "The pagination cursor encodes the last key seen.")
    write(service, "global", "flaky", "A flaky test is a bug report, not noise.")
    write(service, REPO, "unrelated", "Run make lint before pushing.")
    on_ladder = recall(service)
    assert sorted(on_ladder["matched"]) == ["cursor", "flaky"]
    assert sorted(on_ladder["offered"]) == ["cursor", "flaky", "unrelated"]
    assert not any(k.startswith("busy-") for k in on_ladder["offered"] + on_ladder["held"])
    # Positive control: with the busy scope on the ladder its lessons come first.
    with_busy = recall(service, project="busy")
    assert with_busy["matched"][0].startswith("busy-")
    assert {"cursor", "flaky"} <= set(with_busy["offered"] + with_busy["held"])


def test_each_rung_is_matched_with_its_own_owner(service: LessonService) -> None:
    alice = local_actor(principal="user:alice", session="a")
    team = "repo::acme/app"
    # Written while the scope was still alice's own; once it is bound to the org, her
    # personal lesson there is off the ladder (the rung's owner is the org), while her
    # personal global lesson is on it.
    service.memory_write(alice, WriteParams(scope=team, key="mine", value="pagination cursor"))
    service.org_create(alice, OrgCreateParams(slug="acme"))
    service.org_bind(alice, OrgBindParams(org="acme", pattern="repo::acme/*"))
    service.memory_write(alice, WriteParams(scope=team, key="team", value="pagination cursor"))
    service.memory_write(alice, WriteParams(scope="global", key="own", value="flaky cursor"))
    result = service.memory_recall(alice, RecallParams(repo="acme/app", task=TASK))
    assert result.context.ladder == [team, "global"]
    offered = sorted((o.lesson.key, o.lesson.owner) for o in result.offered)
    assert offered == [("own", Owner.user("alice")), ("team", Owner.org("acme"))]
    assert "mine" not in [h.key for h in result.held]
    # Positive control: unbound again, her own lesson at that scope is back on the ladder.
    service.org_unbind(alice, OrgBindParams(org="acme", pattern="repo::acme/*"))
    again = service.memory_recall(alice, RecallParams(repo="acme/app", task=TASK))
    assert sorted(o.lesson.key for o in again.offered) == ["mine", "own"]


Addresses = set[tuple[str, str]]


def _recall_tables(path: Path) -> tuple[set[int], set[int], Addresses, Addresses]:
    """The pks in recall_lessons and of the lessons recall considers; the addresses in
    recall_addresses and of the lessons."""
    conn = sqlite3.connect(path)
    try:
        listed = {pk for (pk,) in conn.execute("SELECT pk FROM recall_lessons")}
        live = {
            pk
            for (pk,) in conn.execute(
                "SELECT pk FROM lessons WHERE status = 'active' AND trust != 'rejected'"
            )
        }
        addresses = set(conn.execute("SELECT owner, scope FROM recall_addresses"))
        held = set(conn.execute("SELECT DISTINCT owner, scope FROM lessons"))
        # Every listed lesson points at its own address.
        wrong = conn.execute(
            "SELECT count(*) FROM recall_lessons AS r JOIN lessons AS l USING (pk)"
            " JOIN recall_addresses AS a ON a.id = r.address"
            " WHERE a.owner != l.owner OR a.scope != l.scope"
        ).fetchone()[0]
        assert wrong == 0
    finally:
        conn.close()
    return listed, live, addresses, held


def test_recall_lessons_follow_every_write_path(sqlite_store: SQLiteStore, clock) -> None:  # type: ignore[no-untyped-def]
    service = LessonService(sqlite_store, clock=clock)
    for key in ("archived", "restored", "rejected", "disputed", "verified", "kept"):
        write(service, REPO, key, f"The {key} pagination cursor lesson.")
    write(service, "project::gone", "only", "The only pagination cursor lesson here.")
    service.memory_write(
        local_actor(principal="user:mallory"),
        WriteParams(scope=REPO, key="theirs", value="Another tenant's pagination cursor."),
    )
    service.memory_write(
        PERSON, WriteParams(scope=REPO, key="expiring", value="A cursor lesson.", ttl_days=1)
    )
    service.memory_archive(PERSON, ChangeParams(scope=REPO, key="archived"))
    service.memory_archive(PERSON, ChangeParams(scope=REPO, key="restored"))
    service.memory_restore(PERSON, ChangeParams(scope=REPO, key="restored"))
    service.memory_reject(PERSON, RejectParams(scope=REPO, key="rejected", reason="wrong"))
    service.memory_dispute(PERSON, DisputeParams(scope=REPO, key="disputed", reason="unsure"))
    service.memory_verify(PERSON, VerifyParams(scope=REPO, key="verified"))
    service.memory_delete(PERSON, DeleteParams(scope="project::gone", key="only"))
    clock.advance(days=2)
    service.memory_purge_expired(PERSON, NoParams())

    listed, live, addresses, held = _recall_tables(sqlite_store.path)
    assert listed == live and len(live) == 5  # restored, disputed, verified, kept, theirs
    assert addresses == held
    assert ("user:local", "project::gone") not in addresses  # no scope name left behind
    assert ("user:local", REPO) in addresses  # control: archived lessons keep theirs

    result = recall(service)
    assert sorted(result["matched"]) == ["kept", "restored", "verified"]
    assert result["held"] == ["disputed"]
    # An import goes through the same triggers.
    target = SQLiteStore(sqlite_store.path.parent / "imported.db")
    try:
        importer = LessonService(target, clock=clock)
        import_lines(importer, export_lines(service))
        listed, live, addresses, held = _recall_tables(target.path)
        assert listed == live and len(live) == 4  # another tenant's lesson is not exported
        assert addresses == held
        assert sorted(recall(importer)["matched"]) == ["kept", "restored", "verified"]
    finally:
        target.close()


def test_migration_fills_the_recall_tables_of_an_older_store(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "old.db"
    store = SQLiteStore(path)
    service = LessonService(store, clock=clock)
    write(service, REPO, "cursor", "The pagination cursor encodes the last key seen.")
    write(service, REPO, "archived", "An archived pagination cursor lesson.")
    write(service, "global", "flaky", "A flaky test is a bug report, not noise.")
    service.memory_archive(PERSON, ChangeParams(scope=REPO, key="archived"))
    store.close()
    # The store as it was before 0012: no recall tables, no triggers, 0012 not recorded.
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        DROP TRIGGER recall_lessons_insert;
        DROP TRIGGER recall_lessons_update;
        DROP TRIGGER recall_lessons_delete;
        DROP TABLE recall_lessons;
        DROP TABLE recall_addresses;
        DELETE FROM schema_migrations WHERE substr(name, 6) = 'recall_create_addresses.sql';
        """
    )
    conn.close()

    store = SQLiteStore(path)
    try:
        assert [m.name[5:] for m in store.applied] == ["recall_create_addresses.sql"]
        listed, live, addresses, held = _recall_tables(path)
        assert listed == live and len(live) == 2
        assert addresses == held
        result = recall(LessonService(store, clock=clock))
        assert sorted(result["matched"]) == ["cursor", "flaky"]
        assert "archived" not in result["offered"] + result["held"]
    finally:
        store.close()


def test_a_rung_with_lessons_recall_did_not_weigh_is_named(service: LessonService) -> None:
    # Without a task, a rung's candidates are its 25 newest (and newest trusted) lessons: a
    # rung with 30 has five that are neither offered nor held, and the result must say so.
    for i in range(30):
        write(service, REPO, f"repo-{i}", f"Repository lesson number {i}.")
    for i in range(20):
        write(service, "global", f"global-{i}", f"Global lesson number {i}.")
    result = service.memory_recall(PERSON, RecallParams(repo="example/app", budget=20_000))
    weighed = {h.key for h in result.held} | {o.lesson.key for o in result.offered}
    assert len([k for k in weighed if k.startswith("repo-")]) == 25
    assert result.not_considered == [REPO]  # global's 20 were all weighed: not named
    assert f"more lessons in {REPO}" in result.text
    explained = service.memory_explain(PERSON, ExplainParams(recall_id=result.recall_id))
    assert explained.context["not_considered"] == [REPO]

    write(service, "global", "global-extra", "One lesson too many for the global rung.")
    for i in range(7):
        write(service, "global", f"global-more-{i}", f"Another global lesson {i}.")
    again = service.memory_recall(PERSON, RecallParams(repo="example/app", budget=20_000))
    assert again.not_considered == [REPO, "global"]


def test_a_rung_recall_weighed_whole_is_not_named(service: LessonService) -> None:
    for i in range(25):
        write(service, REPO, f"repo-{i}", f"Repository lesson number {i}.")
    result = service.memory_recall(PERSON, RecallParams(repo="example/app", budget=20_000))
    assert len(result.offered) + len(result.held) == 25
    assert result.not_considered == []
    assert "more lessons in" not in result.text
