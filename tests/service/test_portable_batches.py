"""An import applies lessons a run at a time (one tombstone query, one insert, one audit append
per run), and that must not show: on both backends, records that share a batch meet each other
in file order as a sequential import would, a batch over the owner's cap lands what fits,
tombstones refuse exactly their scope and the narrower ones, and every lesson that lands gets
its own audit event in the owner's chain, however the file falls into batches."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import dump_text, set_cap
from tests.portable import LOCAL, T0, header, import_lines, lesson, line

from lorestore.core.errors import LorestoreError
from lorestore.core.normalise import value_digest
from lorestore.models import (
    AuditParams,
    NoParams,
    ReadParams,
    RejectParams,
    SearchParams,
    WriteParams,
)
from lorestore.portable import importer
from lorestore.portable.jsonl import Incoming, read_records
from lorestore.portable.models import ImportParams
from lorestore.service import LessonService
from lorestore.storage.protocol import PolicyRow
from lorestore.storage.sqlite import SQLiteStore

S = "repo::acme/app"


def _tombstone(value: str, scope: str = S) -> dict[str, object]:
    return {
        "type": "tombstone",
        "id": "5e0c8f0e-5b7b-4c5e-8f7e-1f2a3b4c5d6e",
        "scope": scope,
        "digest": value_digest(value),
        "reason": "not here",
        "actor": "user:local",
        "time": T0,
    }


def _imported_events(service: LessonService) -> list[tuple[str | None, int]]:
    events = service.memory_audit(LOCAL, AuditParams(limit=500)).events
    return [(e.key, e.detail["line"]) for e in reversed(events) if e.action == "import.lesson"]


def test_records_in_one_batch_meet_each_other_in_file_order(
    service: LessonService,
    store,  # type: ignore[no-untyped-def]
) -> None:
    first = lesson("first", "Pin the resolver version")
    lines = [
        header(),
        line(first),  # 2: lands
        line(_tombstone("Mock the database")),  # 3: rejects that value from here on
        line(lesson("again", "mock the  DATABASE")),  # 4: refused by line 3
        line({**first, "value": "Another value"}),  # 5: the id of line 2, another state
        line(first),  # 6: the id of line 2 again, the same record
        line(lesson("first", "Someone else's lesson")),  # 7: another id at line 2's address
        line(lesson("second", "Unrelated lesson")),  # 8: lands
    ]
    before = dump_text(store)
    dry = import_lines(service, lines, dry_run=True)  # the tombstone refuses from its batch
    assert dump_text(store) == before
    result = import_lines(service, lines)
    assert result.model_dump(exclude={"dry_run"}) == dry.model_dump(exclude={"dry_run"})
    assert [(p.line, p.code) for p in result.problems] == [
        (4, "rejected_value"),
        (5, "target_differs"),
        (7, "address_taken"),
    ]
    assert result.lessons.model_dump() == {"added": 2, "unchanged": 1, "differs": 1, "refused": 2}
    assert result.tombstones.added == 1
    read = service.memory_read(LOCAL, ReadParams(scope=S, key="first")).lesson
    assert read.value == "Pin the resolver version" and read.id == first["id"]
    assert _imported_events(service) == [("first", 2), ("second", 8)]
    assert service.audit_verify(LOCAL, NoParams()).ok


def test_a_batch_over_the_cap_lands_what_fits(service: LessonService) -> None:
    set_cap(service.store, LOCAL.owner, 3)
    lines = [header(), *(line(lesson(f"k{i}", f"Lesson number {i}")) for i in range(5))]
    result = import_lines(service, lines)  # one batch, refused whole, then one at a time
    assert result.lessons.added == 3 and result.lessons.refused == 2
    assert [(p.line, p.code) for p in result.problems] == [(5, "cap_exceeded"), (6, "cap_exceeded")]
    assert [key for key, _ in _imported_events(service)] == ["k0", "k1", "k2"]
    assert service.audit_verify(LOCAL, NoParams()).ok


def test_tombstones_refuse_their_scope_and_narrower_ones(service: LessonService) -> None:
    service.memory_write(LOCAL, WriteParams(scope=S, key="mocks", value="Mock the database"))
    service.memory_reject(LOCAL, RejectParams(scope=S, key="mocks", reason="use a real one"))
    proposal = lesson(
        "proposed",
        "Run the migrations first",
        trust="verified",
        pending_revision=True,
        versions=[
            {
                "version": 1,
                "state": "accepted",
                "value": "Run the migrations first",
                "recorded_at": T0,
                "actor": "user:local",
            },
            {
                "version": 2,
                "state": "proposed",
                "value": "mock the  DATABASE",
                "recorded_at": T0,
                "actor": "user:agent",
            },
        ],
    )
    lines = [
        header(),
        line(lesson("narrower", "Mock the database", scope="branch::acme/app::main")),
        line(lesson("broader", "Mock the database", scope="global")),
        line(lesson("elsewhere", "Mock the database", scope="repo::acme/other")),
        line(proposal),  # its served value is fine; its pending proposal is the rejected one
        line(lesson("fine", "Use a throwaway PostgreSQL")),
    ]
    result = import_lines(service, lines)
    assert [(p.line, p.code) for p in result.problems] == [
        (2, "rejected_value"),
        (5, "rejected_value"),
    ]
    assert "use a real one" in result.problems[0].message
    assert result.lessons.added == 3  # the controls: broader, elsewhere, fine
    assert [key for key, _ in _imported_events(service)] == ["broader", "elsewhere", "fine"]


def test_every_lesson_gets_its_event_however_the_file_is_batched(
    service: LessonService,
    store,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(importer, "BATCH", 7)
    lines = [header()]
    for i in range(30):
        lines.append(line(lesson(f"k{i:02}", f"Lesson {i}", tags=["b", "A"])))
        if i % 11 == 5:
            lines.append(b"{not json")
    first = import_lines(service, lines)
    assert first.lessons.added == 30 and first.invalid == 3
    events = _imported_events(service)
    assert [key for key, _ in events] == [f"k{i:02}" for i in range(30)]
    assert [number for _, number in events] == [
        n + 1 for n, raw in enumerate(lines) if raw.startswith(b'{"type":"lesson"')
    ]
    assert service.audit_verify(LOCAL, NoParams()).ok
    before = dump_text(store)
    again = import_lines(service, lines)
    assert again.lessons.model_dump() == {"added": 0, "unchanged": 30, "differs": 0, "refused": 0}
    assert dump_text(store) == before
    history = service.memory_read(LOCAL, ReadParams(scope=S, key="k07")).lesson
    assert history.tags == ["a", "b"] and history.version == 1


def test_an_import_leaves_the_sqlite_connection_as_it_found_it(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "bulk.db")

    def settings() -> list[int]:
        # Per-connection settings: only the store's own connection can show them.
        conn = store._conn
        return [
            conn.execute(f"PRAGMA {name}").fetchone()[0]
            for name in ("cache_size", "wal_autocheckpoint")
        ]

    before = settings()
    try:
        with store.bulk_load():
            during = settings()
            with store.bulk_load():  # an overlapping import
                assert settings() == during
            assert settings() == during  # the first is still running
        assert settings() == before and during != before
        service = LessonService(store)
        assert import_lines(service, [header(), line(lesson("k", "v"))]).lessons.added == 1
        assert settings() == before
    finally:
        store.close()


def _automerge(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT v FROM lessons_fts_config WHERE k = 'automerge'").fetchone()
    return 4 if row is None else int(row[0])  # absent: FTS5's default, 4


def test_an_import_defers_full_text_merging_and_merges_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / "merge.db"
    store = SQLiteStore(path)
    try:
        service = LessonService(store)
        lines = [header()] + [
            line(lesson(f"k{i}", f"lesson {i} about flaky postgres tests")) for i in range(60)
        ]
        with store.bulk_load():  # an import running, and another one inside it
            assert _automerge(path) == 4  # nothing inserted yet: the file is as it was
            assert import_lines(service, lines).lessons.added == 60
            assert _automerge(path) == 0  # off from the first insert (the setting is in the file)
        assert _automerge(path) == 4
        with sqlite3.connect(path) as conn:  # the index is whole: FTS5's own check, and a search
            conn.execute("INSERT INTO lessons_fts (lessons_fts) VALUES ('integrity-check')")
        hits = service.memory_search(LOCAL, SearchParams(query="postgres", scopes=[S], limit=100))
        assert len(hits.hits) == 60
    finally:
        store.close()


def test_an_import_that_lands_nothing_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "same.db")
    try:
        service = LessonService(store)
        lines = [header(), line(lesson("k", "Pin the resolver version"))]
        assert import_lines(service, lines).lessons.added == 1
        before = dump_text(store)
        assert import_lines(service, lines).lessons.unchanged == 1
        assert dump_text(store) == before
    finally:
        store.close()


def test_a_store_turns_full_text_merging_back_on_after_an_import_died(tmp_path: Path) -> None:
    path = tmp_path / "died.db"
    SQLiteStore(path).close()
    with sqlite3.connect(path) as conn:  # what an import killed mid-way leaves behind
        conn.execute("INSERT INTO lessons_fts (lessons_fts, rank) VALUES ('automerge', 0)")
    assert _automerge(path) == 0
    SQLiteStore(path).close()
    assert _automerge(path) == 4


def test_an_import_on_a_full_disk_stops_and_says_where(tmp_path: Path) -> None:
    """SQLite's page limit makes the disk full for real: the import stops at the batch that
    failed (it does not retry every record of every batch for hours), reports it with the
    line, leaves the connection's settings as they were, and the same file imported again
    once there is room lands the rest."""
    path = tmp_path / "full.db"
    store = SQLiteStore(path)
    try:
        service = LessonService(store)
        before = [store._conn.execute(f"PRAGMA {n}").fetchone()[0] for n in ("cache_size",)]
        pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
        store._conn.execute(f"PRAGMA max_page_count = {pages + 40}")
        big = "a long lesson about the flaky integration tests and their database " * 20
        lines = [header()] + [line(lesson(f"k{i}", f"{i} {big}")) for i in range(2500)]
        result = import_lines(service, lines)
        stopped = [p for p in result.problems if p.code == "storage_error"]
        assert len(stopped) == 1 and "stopped" in stopped[0].message
        assert stopped[0].line == 2  # the first batch failed: nothing after it was read
        assert result.lessons.added == 0 and result.read < 2500
        assert [store._conn.execute("PRAGMA cache_size").fetchone()[0]] == before
        store._conn.execute("PRAGMA max_page_count = 1073741823")  # room again: the control
        again = import_lines(service, lines)
        assert again.lessons.added == 2500 and again.problems == []
        assert store._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        store.close()
    assert _automerge(path) == 4


def test_problems_are_reported_in_file_order_while_the_next_batch_is_read_ahead(
    service: LessonService,
    store,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each batch is read while the one before commits; what the read finds wrong (a line
    that is not JSON) is still reported after what became of the records of the batches
    before it (an address another lesson holds), as when one batch was read at a time: a
    batch's unreadable lines first, then its records' problems."""
    monkeypatch.setattr(importer, "BATCH", 4)
    lines = [header()]
    for i in range(14):
        lines.append(line(lesson(f"k{i % 9}", f"Lesson {i}")))  # k0..k4 again from line 13
        if i % 5 == 2:
            lines.append(b"{not json")  # lines 5, 11 and 17
    reported: list[tuple[int | None, str]] = []
    result = service.memory_import(
        LOCAL,
        ImportParams(),
        read_records([b"".join(raw + b"\n" for raw in lines)]),
        lambda problem: reported.append((problem.line, problem.code)),
    )
    assert result.lessons.added == 9 and result.lessons.refused == 5 and result.invalid == 3
    # Batches of four records: lines 2-6, 7-10, 11-15 (with 11) and 16-18 (with 17).
    invalid, taken = "invalid_record", "address_taken"
    assert reported == [
        (5, invalid),
        (11, invalid),
        (13, taken),
        (14, taken),
        (15, taken),
        (17, invalid),
        (16, taken),
        (18, taken),
    ]


def test_a_read_that_fails_mid_file_keeps_the_batches_read_before_it(
    service: LessonService,
    store,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A failure reading the file (a client gone, a disk error) is raised once the batches
    before it are applied; the records of the batch it interrupted are not."""
    monkeypatch.setattr(importer, "BATCH", 3)
    data = b"".join(
        raw + b"\n" for raw in [header()] + [line(lesson(f"k{i}", f"Lesson {i}")) for i in range(7)]
    )

    def records() -> Iterator[Incoming]:
        yield from read_records([data])
        raise OSError("the disk went away")

    with pytest.raises(OSError, match="went away"):
        service.memory_import(LOCAL, ImportParams(), records())
    assert service.memory_read(LOCAL, ReadParams(scope=S, key="k5")).lesson.value == "Lesson 5"
    with pytest.raises(LorestoreError) as missing:
        service.memory_read(LOCAL, ReadParams(scope=S, key="k6"))
    assert missing.value.code == "not_found"


def _policy(store, scope: str) -> list[PolicyRow]:  # type: ignore[no-untyped-def]
    with store.transaction(write=False, actor="user:local") as tx:
        return list(tx.scope_policies("user:local", [scope]))


def test_meanwhile_runs_once_after_the_work_and_the_commit_stands(
    store,  # type: ignore[no-untyped-def]
) -> None:
    calls: list[str] = []
    row = PolicyRow("global", "commit", False)
    with store.transaction(
        write=True, actor="user:local", meanwhile=lambda: calls.append("m")
    ) as tx:
        tx.set_policy("user:local", row, by="user:local", at=T0)
        assert calls == []
    assert calls == ["m"] and _policy(store, "global") == [row]
    # What meanwhile raises comes out of the transaction; what it committed stands.
    other = PolicyRow("project::x", "none", True)

    def fails() -> None:
        raise RuntimeError("reading the next batch failed")

    with (
        pytest.raises(RuntimeError, match="next batch"),
        store.transaction(write=True, actor="user:local", meanwhile=fails) as tx,
    ):
        tx.set_policy("user:local", other, by="user:local", at=T0)
    assert _policy(store, "project::x") == [other]
    # A transaction whose work fails never calls it.
    with (
        pytest.raises(ValueError),
        store.transaction(write=True, actor="user:local", meanwhile=lambda: calls.append("again")),
    ):
        raise ValueError("the work failed")
    assert calls == ["m"]


def test_a_commit_that_fails_while_meanwhile_runs_is_raised_after_it(tmp_path: Path) -> None:
    """SQLite commits in another thread while meanwhile runs here: a failed commit (a
    deferred foreign key, here) is raised once meanwhile returns, and nothing of it lands."""
    store = SQLiteStore(tmp_path / "commit.db")
    try:
        calls: list[str] = []
        row = PolicyRow("global", "commit", False)
        with (
            pytest.raises(LorestoreError) as failed,
            store.transaction(
                write=True, actor="user:local", meanwhile=lambda: calls.append("m")
            ) as tx,
        ):
            tx.set_policy("user:local", row, by="user:local", at=T0)
            store._conn.execute("PRAGMA defer_foreign_keys = ON")
            store._conn.execute(
                "INSERT INTO memberships VALUES ('org:none', 'user:none', 'member', ?)", (T0,)
            )
        assert "FOREIGN KEY" in failed.value.message and calls == ["m"]
        assert _policy(store, "global") == []
        with store.transaction(write=True, actor="user:local", meanwhile=lambda: None) as tx:
            tx.set_policy("user:local", row, by="user:local", at=T0)  # the control
        assert _policy(store, "global") == [row]
    finally:
        store.close()
