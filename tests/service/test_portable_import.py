"""Import and export through the service on both backends (PostgreSQL as the app role): a
rejected value stays out while the rest lands, the same file twice changes nothing, a bad line
is named and skipped, a dry run writes nothing, and tenancy holds both ways. Every refusal
has its positive control beside it."""

from __future__ import annotations

import json

import pytest
from tests.conftest import dump_text
from tests.portable import LOCAL, T0, codes, export_lines, header, import_lines, lesson, line

from lorestore.auth.actor import local_actor, local_agent
from lorestore.core.errors import LorestoreError
from lorestore.core.normalise import value_digest
from lorestore.core.owner import Owner
from lorestore.models import (
    Address,
    AuditParams,
    ChangeParams,
    NoParams,
    OrgAcceptParams,
    OrgBindParams,
    OrgCreateParams,
    OrgInviteParams,
    ReadParams,
    RejectParams,
    WriteParams,
)
from lorestore.portable import importer
from lorestore.portable.models import ExportParams
from lorestore.service import LessonService

S = "repo::acme/app"
ALICE = local_actor(principal="user:alice", session="a")
BOB = local_actor(principal="user:bob", session="b")
CAROL = local_actor(principal="user:carol", session="c")


def _read(service: LessonService, key: str, scope: str = S) -> str:
    return service.memory_read(LOCAL, ReadParams(scope=scope, key=key)).lesson.value


def test_a_rejected_value_is_refused_and_the_rest_lands(service: LessonService) -> None:
    service.memory_write(LOCAL, WriteParams(scope="global", key="mocks", value="Mock the DB"))
    service.memory_reject(LOCAL, RejectParams(scope="global", key="mocks", reason="use real pg"))
    result = import_lines(
        service,
        [
            header(),
            line(lesson("again", "mock   the db")),  # the same value, another key, narrower
            line(lesson("fine", "Use the real database")),
            line(lesson("hidden", "Mock\u200b the\u00ad DB")),  # invisible characters inside
        ],
    )
    assert result.lessons.added == 1 and result.lessons.refused == 2
    refusals = [(p.code, p.line, p.key) for p in result.problems]
    assert refusals == [("rejected_value", 2, "again"), ("rejected_value", 4, "hidden")]
    assert "use real pg" in result.problems[0].message and "global" in result.problems[0].message
    assert _read(service, "fine") == "Use the real database"  # the positive control
    with pytest.raises(LorestoreError) as gone:
        _read(service, "again")
    assert gone.value.code == "not_found"


def test_importing_the_same_file_twice_changes_nothing(service: LessonService, store) -> None:  # type: ignore[no-untyped-def]
    service.memory_write(LOCAL, WriteParams(scope=S, key="pg", value="Use Postgres 16"))
    service.memory_write(LOCAL, WriteParams(scope=S, key="pg", value="Use Postgres 17"))
    service.memory_write(LOCAL, WriteParams(scope="global", key="bad", value="Skip the tests"))
    service.memory_reject(LOCAL, RejectParams(scope="global", key="bad", reason="never"))
    exported = export_lines(service)
    other = [header(), line(lesson("new", "A lesson from elsewhere")), line({"type": "note"})]
    first = import_lines(service, exported + other[1:])
    assert first.lessons.model_dump() == {"added": 1, "unchanged": 2, "differs": 0, "refused": 0}
    assert first.tombstones.unchanged == 1 and first.unknown.added == 1
    before = dump_text(store)
    second = import_lines(service, exported + other[1:])
    assert second.lessons.model_dump() == {"added": 0, "unchanged": 3, "differs": 0, "refused": 0}
    assert second.tombstones.unchanged == 1 and second.unknown.unchanged == 1
    assert dump_text(store) == before  # not a row, not an audit event
    assert service.audit_verify(LOCAL, NoParams()).ok
    events = service.memory_audit(LOCAL, AuditParams(limit=10)).events
    assert [e.action for e in events[:2]] == ["import.unknown", "import.lesson"]
    assert events[1].key == "new" and events[1].detail["line"] == 2 + len(exported) - 1


def test_a_malformed_line_is_named_and_the_rest_lands(service: LessonService) -> None:
    lines = [
        header(),
        line(lesson("one", "first lesson")),
        b"{not json",
        line(lesson("two", "second lesson", scope="repo:acme/app")),
        line(lesson("three", "third lesson")),
        b"[1, 2]",
        line({k: v for k, v in lesson("four", "fourth").items() if k != "id"}),
        line(lesson("five", "fifth lesson", versions=[{"version": 9}])),
        line(lesson("six", "sixth lesson")),
    ]
    result = import_lines(service, lines)
    assert [(p.line, p.code) for p in result.problems] == [
        (3, "invalid_record"),
        (4, "invalid_record"),
        (6, "invalid_record"),
        (7, "invalid_record"),
        (8, "invalid_record"),
    ]
    assert 'use "::" as the separator: "repo::acme/app"' in result.problems[1].message
    assert result.invalid == 5 and result.read == 9 and result.lessons.added == 3
    assert [_read(service, k) for k in ("one", "three", "six")] == [
        "first lesson",
        "third lesson",
        "sixth lesson",
    ]


def test_a_newer_format_is_refused_before_anything_lands(service: LessonService, store) -> None:  # type: ignore[no-untyped-def]
    before = dump_text(store)
    newer = line({"format": "lorestore-jsonl", "version": 2, "exported_at": "x", "source": {}})
    with pytest.raises(LorestoreError) as refused:
        import_lines(service, [newer, line(lesson("k", "v"))])
    assert refused.value.code == "invalid_argument" and "version 2" in refused.value.message
    assert dump_text(store) == before
    assert import_lines(service, [header(), line(lesson("k", "v"))]).lessons.added == 1


def test_a_dry_run_reports_and_writes_nothing(
    service: LessonService,
    store,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setattr(importer, "BATCH", 1)  # every record in a transaction of its own
    tomb = {
        "type": "tombstone",
        "id": "3c0c8f0e-5b7b-4c5e-8f7e-1f2a3b4c5d6e",
        "scope": "global",
        "digest": value_digest("rejected text"),
        "reason": "r",
        "actor": "user:local",
        "time": "2026-01-01T00:00:00Z",
    }
    lines = [header(), line(tomb), line(lesson("k", "Rejected TEXT")), line(lesson("j", "ok"))]
    before = dump_text(store)
    dry = import_lines(service, lines, dry_run=True)
    assert dump_text(store) == before
    assert dry.dry_run and dry.tombstones.added == 1 and dry.lessons.added == 1
    assert codes(dry) == ["rejected_value"]  # the tombstone earlier in the file refuses it
    real = import_lines(service, lines)
    assert real.model_dump(exclude={"dry_run"}) == dry.model_dump(exclude={"dry_run"})


def test_import_resolves_the_owner_and_refuses_what_it_may_not_write(
    service: LessonService,
) -> None:
    service.org_create(ALICE, OrgCreateParams(slug="acme"))  # type: ignore[call-arg]
    service.org_bind(ALICE, OrgBindParams(org="acme", pattern="repo::acme/*"))
    code = service.org_invite(ALICE, OrgInviteParams(org="acme", user="carol", role="viewer"))
    service.org_accept(CAROL, OrgAcceptParams(code=code.code))
    team = line(lesson("team", "An org lesson"))
    alice = import_lines(service, [header(), team], actor=ALICE)
    assert alice.lessons.added == 1
    read = service.memory_read(ALICE, ReadParams(scope=S, key="team")).lesson
    assert read.owner == Owner.org("acme")
    for outsider, why in ((BOB, "not a member"), (CAROL, "viewer")):
        mine = line(lesson("mine", "A personal lesson", scope="global"))
        result = import_lines(service, [header(), line(lesson("t2", "x")), mine], actor=outsider)
        assert codes(result) == ["forbidden"] and why in result.problems[0].message
        assert result.lessons.added == 1  # the personal lesson lands: the control
        own = service.memory_read(outsider, ReadParams(scope="global", key="mine")).lesson
        assert own.owner == Owner.parse(outsider.principal)


def test_keeping_adjudicated_trust_needs_a_reviewer(service: LessonService) -> None:
    agent = local_agent(session="agent-1")  # reads and writes, never reviews
    verified = line(lesson("v", "A verified lesson", trust="verified"))
    reviewed = line(
        lesson("r", "A candidate with a forged review", review={"by": "user:boss", "at": T0})
    )
    candidate = line(lesson("c", "A candidate lesson"))
    tomb = line(
        {
            "type": "tombstone",
            "id": "9d6f0c1a-2b3c-4d5e-8f90-a1b2c3d4e5f6",
            "scope": "global",
            "digest": "b" * 64,
            "reason": "r",
            "actor": "user:x",
            "time": "2026-01-01",
        }
    )
    result = import_lines(service, [header(), verified, reviewed, candidate, tomb], actor=agent)
    assert codes(result) == ["forbidden", "forbidden", "forbidden"]
    assert result.lessons.added == 1 and _read(service, "c") == "A candidate lesson"
    person = import_lines(service, [header(), verified, reviewed, tomb])
    assert person.lessons.added == 2 and person.tombstones.added == 1
    assert service.memory_read(LOCAL, ReadParams(scope=S, key="v")).lesson.trust == "verified"


def test_export_holds_what_the_actor_may_read(service: LessonService) -> None:
    service.memory_write(ALICE, WriteParams(scope="global", key="a", value="Alice's lesson"))
    service.memory_write(BOB, WriteParams(scope="global", key="b", value="Bob's lesson"))
    service.memory_write(LOCAL, WriteParams(scope="global", key="r", value="A wrong lesson"))
    service.memory_reject(LOCAL, RejectParams(scope="global", key="r", reason="wrong"))

    def keys(actor: object) -> list[str]:
        records = [json.loads(x) for x in export_lines(service, actor)[1:]]  # type: ignore[arg-type]
        return sorted(r["key"] for r in records if r["type"] == "lesson")

    assert keys(ALICE) == ["a"] and keys(BOB) == ["b"]
    assert keys(LOCAL) == ["r"]  # a reviewer sees the rejected lesson: the control
    agent = local_agent(session="x")
    export = service.memory_export(agent, ExportParams())
    assert not [r for r in export.records() if r["type"] == "lesson"]
    assert export.withheld == {"rejected_needs_review": 1}


def test_export_filters_by_scope_state_and_time(service: LessonService, clock) -> None:  # type: ignore[no-untyped-def]
    service.memory_write(LOCAL, WriteParams(scope=S, key="old", value="an old lesson"))
    clock.advance(days=10)
    service.memory_write(LOCAL, WriteParams(scope="branch::acme/app::main", key="br", value="b"))
    service.memory_write(LOCAL, WriteParams(scope="global", key="g", value="a global lesson"))
    service.memory_archive(LOCAL, ChangeParams(scope="global", key="g"))

    def keys(**params: object) -> list[str]:
        rows = [json.loads(x) for x in export_lines(service, **params)[1:]]
        return sorted(r["key"] for r in rows if r["type"] == "lesson")

    assert keys() == ["br", "g", "old"]
    assert keys(scopes=[S]) == ["br", "old"]  # a repo covers its branches
    assert keys(scopes=["repo::acme/*"], states=["active"]) == ["br", "old"]
    assert keys(states=["archived"]) == ["g"]
    assert keys(since="2026-01-05") == ["br", "g"]
    assert keys(until="2026-01-05") == ["old"]
    with pytest.raises(LorestoreError) as bad:
        keys(since="2026-02-01", until="2026-01-01")
    assert bad.value.code == "invalid_time"


def test_conflicting_records_keep_the_store_and_say_so(service: LessonService) -> None:
    record = lesson("k", "the store's lesson")
    assert import_lines(service, [header(), line(record)]).lessons.added == 1
    changed = {**record, "value": "another value"}
    moved = lesson("k", "someone else's lesson")  # another id at the same address
    result = import_lines(service, [header(), line(changed), line(moved)])
    assert codes(result) == ["target_differs", "address_taken"]
    assert result.lessons.differs == 1 and result.lessons.refused == 1
    assert _read(service, "k") == "the store's lesson"
    history = service.memory_history(LOCAL, Address(scope=S, key="k"))
    assert [v.value for v in history.versions] == ["the store's lesson"]


def test_times_before_the_year_1000_keep_their_iso_form(service: LessonService) -> None:
    # Stored times are text compared as text: year 1 must be written 0001, or it sorts after
    # 2026, reads back as a time no parser accepts, and its export cannot be imported.
    service.memory_write(
        LOCAL,
        WriteParams(
            scope=S,
            key="ancient",
            value="Held in the first millennium",
            valid_from="0001-01-01T00:00:00Z",
            valid_to="0999-12-31",
        ),
    )
    stored = service.memory_read(LOCAL, ReadParams(scope=S, key="ancient")).lesson
    assert (stored.valid_from, stored.valid_to) == (
        "0001-01-01T00:00:00.000000Z",
        "0999-12-31T00:00:00.000000Z",
    )
    held = service.memory_read(LOCAL, ReadParams(scope=S, key="ancient", valid_at="0500-06-01"))
    assert held.lesson.version == 1  # the positive control: inside the window
    with pytest.raises(LorestoreError) as outside:
        service.memory_read(LOCAL, ReadParams(scope=S, key="ancient", valid_at="1000-01-02"))
    assert outside.value.code == "not_found"
    lines = export_lines(service)
    assert b'"valid_from":"0001-01-01T00:00:00.000000Z"' in lines[1]
    again = import_lines(service, lines)
    assert (again.invalid, again.lessons.unchanged) == (0, 1)


def test_a_version_digest_from_before_invisible_characters_left_is_accepted(
    service: LessonService,
) -> None:
    """A file exported by a store written before default-ignorable characters left the value
    digest carries, for a value with one, the digest with it kept: the record is still valid,
    and the value is still checked against tombstones by both digests."""
    from lorestore.core.normalise import digest_with_ignorables

    value = "Use the\u200b staging database"
    version = {
        "version": 1,
        "state": "accepted",
        "value": value,
        "value_digest": digest_with_ignorables(value),
        "recorded_at": T0,
        "actor": "user:local",
    }
    record = lesson("staging", value, versions=[version])
    forged = lesson("forged", value, versions=[version | {"value_digest": "0" * 64}])
    result = import_lines(service, [header(), line(record), line(forged)])
    assert result.lessons.added == 1 and codes(result) == ["invalid_record"]
    assert "value_digest does not match" in result.problems[0].message
    assert _read(service, "staging") == value
