"""Each rule once: the tombstone rule (``core/tombstones.py``) and the value normalisation
(``core/normalise.py``) hold on every path that brings a value in, through the real handlers:
the service, the CLI, REST, the stdio MCP server, ``lorestore import`` and ``lorestore
migrate``, on SQLite and PostgreSQL. After ``Never bulk-insert into events`` is rejected, the
same value with a trailing full stop, a run of exclamation marks, or shouted with a
non-breaking hyphen (U+2011, which NFKC maps to U+2010, not to ``-``) is refused at the
rejected scope and a narrower one; beside each refusal, positive controls: an unrelated value
at the same scope lands, and the rejected value lands at a scope outside the tombstone's
ladder. Then the normalisation's properties (hypothesis), and the other rules moved to one
place (scope patterns and binding specificity, trust transitions, the audit event)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from tests.conftest import Cli, Clock
from tests.migrating import pg_url
from tests.pg import Template
from tests.portable import header, import_lines, lesson, line
from tests.serving import error_of, make_api
from tests.stdio import Tools, run_mcp
from typer.testing import CliRunner

from lorestore.auth.actor import local_actor, local_agent
from lorestore.cli.main import app
from lorestore.core import normalise, patterns, tombstones
from lorestore.core.audit import CHAINED_FIELDS, GENESIS, AuditEntry
from lorestore.core.confusables import skeleton
from lorestore.core.errors import LorestoreError
from lorestore.core.normalise import normalise_value, value_digest, value_digests
from lorestore.core.records import AuditEvent
from lorestore.core.scope import parse_scope
from lorestore.models import (
    AuditParams,
    ChangeParams,
    NoParams,
    ReadParams,
    RejectParams,
    VerifyParams,
    WriteParams,
)
from lorestore.service import LessonService
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.protocol import Store, Tombstone
from lorestore.storage.rows import AUDIT_COLUMNS
from lorestore.storage.sqlite import SQLiteStore

S = "repo::acme/app"
NARROWER = "branch::acme/app::main"
OUTSIDE = "repo::acme/other"  # not on the ladder of S or of NARROWER
REJECTED = "Never bulk-insert into events"
SPELLINGS = (
    "Never bulk-insert into events.",
    "never bulk-insert into events!!",
    "NEVER bulk\u2011insert into events",
)
UNRELATED = "Batch event inserts through the COPY loader"
REASON = "it locks the events table"
UNDO = f"lorestore reject {S} bulk --undo --reason"
PERSON = local_actor(session="person-1")


def assert_refusal(error: dict[str, Any]) -> None:
    """The one refusal every surface gives: code, who/why, the rejected lesson, the undo."""
    assert error["code"] == "rejected_value", error
    assert REASON in error["message"] and f"rejected at {S}" in error["message"]
    assert error["details"]["key"] == "bulk" and error["details"]["scope"] == S
    assert UNDO in error["hint"]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The store of the CLI, REST and MCP surfaces: LORESTORE_HOME's SQLite file, or a fresh
    PostgreSQL database reached as the application role (LORESTORE_DATABASE_URL)."""
    if request.param == "sqlite":
        return f"sqlite:///{home / 'lorestore.db'}"
    template: Template = request.getfixturevalue("pg_template")
    url = pg_url(template.app_url(request.getfixturevalue("pg_database")))
    monkeypatch.setenv("LORESTORE_DATABASE_URL", url)
    return url


def reject_through_cli(cli: Cli) -> None:
    cli.ok("write", S, "bulk", REJECTED)
    assert cli.ok("reject", S, "bulk", "--reason", REASON)["lesson"]["trust"] == "rejected"


# --- the tombstone rule on every surface -------------------------------------------------


def test_service_refuses_every_spelling_on_every_path(service: LessonService) -> None:
    """Write, restore and accepting a revision all refuse the spellings; copies of them
    written before the rejection are rejected with it (reject's copies)."""
    agent = local_agent(session="agent-1")

    def write(scope: str, key: str, value: str) -> str:
        params = WriteParams(scope=scope, key=key, value=value)
        return service.memory_write(agent, params).result

    write(S, "bulk", REJECTED)
    for n, spelling in enumerate(SPELLINGS):  # copies, before the rejection
        write(S if n % 2 else NARROWER, f"copy-{n}", spelling)
    write(OUTSIDE, "copy", SPELLINGS[0])
    write(NARROWER, "archived", SPELLINGS[1])
    service.memory_archive(PERSON, ChangeParams(scope=NARROWER, key="archived"))
    write(S, "verified", "Insert events one at a time")
    service.memory_verify(PERSON, VerifyParams(scope=S, key="verified"))
    assert write(S, "verified", SPELLINGS[2]) == "proposed"  # before the rejection too

    service.memory_reject(PERSON, RejectParams(scope=S, key="bulk", reason=REASON))

    for n in range(len(SPELLINGS)):  # the copies on the ladder went with it
        scope = S if n % 2 else NARROWER
        with pytest.raises(LorestoreError) as gone:
            service.memory_read(agent, ReadParams(scope=scope, key=f"copy-{n}"))
        assert gone.value.code == "not_found"
    before = service.memory_audit(PERSON, AuditParams()).events
    for scope in (S, NARROWER):
        for spelling in SPELLINGS:
            with pytest.raises(LorestoreError) as refused:
                write(scope, "again", spelling)
            assert_refusal(refused.value.to_dict())
    # The archived copy was rejected with the others: restoring it serves nothing.
    restored = service.memory_restore(PERSON, ChangeParams(scope=NARROWER, key="archived"))
    assert restored.lesson.trust == "rejected"
    with pytest.raises(LorestoreError) as accept:
        service.memory_verify(PERSON, VerifyParams(scope=S, key="verified", revision=True))
    assert_refusal(accept.value.to_dict())
    after = service.memory_audit(PERSON, AuditParams()).events
    assert [e.action for e in after[: len(after) - len(before)]] == ["restore"]
    assert after[len(after) - len(before) :] == before  # the refusals changed nothing
    # Positive controls: an unrelated value at the scope, the value outside the ladder
    # (the copy there kept its trust, and another spelling there is the same lesson).
    assert write(S, "unrelated", UNRELATED) == "created"
    outside = service.memory_read(agent, ReadParams(scope=OUTSIDE, key="copy")).lesson
    assert outside.trust == "candidate"
    assert write(OUTSIDE, "copy", SPELLINGS[2]) == "seen"
    assert write("global", "bulk", SPELLINGS[1]) == "created"


def test_restore_refuses_a_spelling_that_a_later_tombstone_rejects(
    service: LessonService,
) -> None:
    """An imported tombstone rejects no copies; restoring one is where the rule meets it."""
    agent = local_agent(session="agent-1")
    for key, value in (("archived", SPELLINGS[1]), ("control", UNRELATED)):
        service.memory_write(agent, WriteParams(scope=NARROWER, key=key, value=value))
        service.memory_archive(PERSON, ChangeParams(scope=NARROWER, key=key))
    tomb = {
        "type": "tombstone",
        "id": "00000000-0000-4000-8000-0000000000ac",
        "scope": S,
        "digest": value_digest(REJECTED),
        "reason": REASON,
        "actor": "user:reviewer",
        "time": "2026-01-01T00:00:00.000000Z",
    }
    imported = import_lines(service, [header(), line(tomb)], actor=PERSON)
    assert imported.tombstones.added == 1
    with pytest.raises(LorestoreError) as refused:
        service.memory_restore(PERSON, ChangeParams(scope=NARROWER, key="archived"))
    assert refused.value.code == "rejected_value" and REASON in refused.value.message
    assert "SCOPE KEY --undo" in (refused.value.hint or "")  # no lesson to name: the form
    restored = service.memory_restore(PERSON, ChangeParams(scope=NARROWER, key="control"))
    assert restored.lesson.status == "active"  # the control


def test_cli_refuses_every_spelling(cli: Cli, backend: str) -> None:
    reject_through_cli(cli)
    before = cli.ok("audit")["events"]
    for scope in (S, NARROWER):
        for spelling in SPELLINGS:
            refused = cli("write", scope, "again", spelling, "--json")
            assert refused.exit_code == 1
            assert_refusal(refused.error())
    assert cli.ok("audit")["events"] == before
    assert cli.ok("write", S, "unrelated", UNRELATED)["result"] == "created"
    results = [cli.ok("write", OUTSIDE, "bulk", v)["result"] for v in SPELLINGS]
    assert results == ["created", "seen", "seen"]  # one value, three spellings


def test_rest_refuses_every_spelling(home: Path, backend: str) -> None:
    for api in make_api(home):
        reviewer, agent = api.mint(permission="review"), api.mint(permission="write")
        api.ok("memory_write", {"scope": S, "key": "bulk", "value": REJECTED}, token=agent)
        api.ok("memory_reject", {"scope": S, "key": "bulk", "reason": REASON}, token=reviewer)
        for scope in (S, NARROWER):
            for spelling in SPELLINGS:
                body = {"scope": scope, "key": "again", "value": spelling}
                assert_refusal(error_of(api.post("memory_write", body, token=agent), 409))
        control = {"scope": S, "key": "unrelated", "value": UNRELATED}
        assert api.ok("memory_write", control, token=agent)["result"] == "created"
        outside = {"scope": OUTSIDE, "key": "bulk", "value": SPELLINGS[0]}
        assert api.ok("memory_write", outside, token=agent)["result"] == "created"


def test_stdio_mcp_refuses_every_spelling(home: Path, cli: Cli, backend: str) -> None:
    reject_through_cli(cli)

    async def agent(tools: Tools) -> None:
        for scope in (S, NARROWER):
            for spelling in SPELLINGS:
                refused = await tools.error("memory_write", scope=scope, key="k", value=spelling)
                assert_refusal(refused)
        ok = await tools.ok("memory_write", scope=S, key="unrelated", value=UNRELATED)
        assert ok["result"] == "created"
        ok = await tools.ok("memory_write", scope=OUTSIDE, key="bulk", value=SPELLINGS[2])
        assert ok["result"] == "created"

    env = {} if backend.startswith("sqlite") else {"LORESTORE_DATABASE_URL": backend}
    run_mcp(home, agent, **env)


def test_import_refuses_every_spelling(cli: Cli, backend: str, tmp_path: Path) -> None:
    reject_through_cli(cli)
    records = [
        lesson(f"k{n}", spelling, scope=scope)
        for n, (scope, spelling) in enumerate((s, v) for s in (S, NARROWER) for v in SPELLINGS)
    ]
    records += [lesson("unrelated", UNRELATED), lesson("bulk", SPELLINGS[1], scope=OUTSIDE)]
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(x + b"\n" for x in [header(), *map(line, records)]))
    done = cli("import", str(path), "--json")
    assert done.exit_code == 1  # some records did not land
    result = done.json()
    assert result["lessons"] == {"added": 2, "unchanged": 0, "differs": 0, "refused": 6}
    refused = [p for p in result["problems"] if p["code"] == "rejected_value"]
    assert [p["key"] for p in refused] == [f"k{n}" for n in range(6)]
    assert all(REASON in p["message"] and f"rejected at {S}" in p["message"] for p in refused)
    assert cli.ok("read", S, "unrelated")["lesson"]["value"] == UNRELATED
    assert cli.ok("read", OUTSIDE, "bulk")["lesson"]["value"] == SPELLINGS[1]
    assert cli("read", S, "k0", "--json").error()["code"] == "not_found"


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Store]]:
    """A migrate target: its URL for the command, and its store as the application sees it."""
    if request.param == "sqlite":
        path = tmp_path / "target.db"
        store: Store = SQLiteStore(path)
        yield f"sqlite:///{path}", store
    else:
        template: Template = request.getfixturevalue("pg_template")
        name = request.getfixturevalue("pg_database")
        store = PostgresStore(template.app_url(name), max_size=2)
        yield pg_url(template.admin_url(name)), store
    store.close()


def test_migrate_refuses_every_spelling(
    tmp_path: Path, target: tuple[str, Store], clock: Clock
) -> None:
    url, store = target
    there = LessonService(store, clock=clock)
    there.memory_write(PERSON, WriteParams(scope=S, key="bulk", value=REJECTED))
    there.memory_reject(PERSON, RejectParams(scope=S, key="bulk", reason=REASON))
    source = SQLiteStore(tmp_path / "source.db")
    here = LessonService(source, clock=clock)
    keys = []
    for scope in (S, NARROWER):
        for n, spelling in enumerate(SPELLINGS):
            keys.append(f"{scope.split('::')[0]}-{n}")
            here.memory_write(PERSON, WriteParams(scope=scope, key=keys[-1], value=spelling))
    here.memory_write(PERSON, WriteParams(scope=S, key="unrelated", value=UNRELATED))
    here.memory_write(PERSON, WriteParams(scope=OUTSIDE, key="bulk", value=SPELLINGS[0]))
    source.close()

    done = CliRunner().invoke(
        app,
        ["migrate", "--from", f"sqlite:///{tmp_path / 'source.db'}", "--to", url, "--json"],
        catch_exceptions=False,
    )
    assert done.exit_code == 1, done.stderr  # what was not copied makes it exit 1
    report = json.loads(done.stdout)
    assert report["complete"] is False
    refused = [r for r in report["refused"] if r["reason"] == "rejected_value"]
    assert sorted(r["details"]["key"] for r in refused) == sorted(keys)
    for refusal in refused:  # the core refusal, placed in the target, with its undo
        assert f"rejected at {S} in the target" in refusal["message"]
        assert REASON in refusal["message"] and UNDO in refusal["message"]
    assert report["tables"]["lessons"]["copied"] == 2
    read = there.memory_read
    assert read(PERSON, ReadParams(scope=S, key="unrelated")).lesson.value == UNRELATED
    assert read(PERSON, ReadParams(scope=OUTSIDE, key="bulk")).lesson.value == SPELLINGS[0]
    with pytest.raises(LorestoreError) as absent:
        read(PERSON, ReadParams(scope=NARROWER, key=keys[-1]))
    assert absent.value.code == "not_found"


def test_migrate_and_write_ask_the_same_rule(tmp_path: Path) -> None:
    """The rule is core's: the same live tombstones and digests give the same answer
    whichever path asks (the oldest tombstone on the ladder is named)."""
    tombs = [
        Tombstone("t-new", "user:local", S, value_digest(REJECTED), "r", "a", "2026-02-01"),
        Tombstone("t-old", "user:local", "global", value_digest(REJECTED), "r", "a", "2026-01"),
        Tombstone("t-off", "user:local", OUTSIDE, value_digest(REJECTED), "r", "a", "2025-01"),
    ]
    for spelling in SPELLINGS:
        digests = value_digests(spelling)
        assert tombstones.refusing_tombstone(tombs, parse_scope(NARROWER), digests) == tombs[1]
        assert tombstones.refusing_tombstone(tombs, NARROWER, digests) == tombs[1]  # row text
        assert tombstones.refusing_tombstone(tombs[:1], "global", digests) is None  # broader
        rejected = tombstones.refusing_tombstone(tombs, S, digests, trust="rejected")
        assert rejected is None  # a correction record passes
    assert tombstones.refusing_tombstone(tombs, S, value_digests(UNRELATED)) is None
    assert tombstones.ladder("not a scope") == frozenset({"not a scope"})


# --- the normalisation -------------------------------------------------------------------


def _digest_of_steps_1_2(value: str) -> str:
    """The digest as lorestore computed it before dashes, runs and trailing marks folded."""
    visible = normalise._IGNORABLE.sub("", value)
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", visible).casefold())
    return hashlib.sha256(" ".join(folded.split()).encode()).hexdigest()


def test_the_three_spellings_are_one_value() -> None:
    assert {normalise_value(v) for v in (REJECTED, *SPELLINGS)} == {"never bulk-insert into events"}
    assert {value_digest(v) for v in (REJECTED, *SPELLINGS)} == {value_digest(REJECTED)}
    # NFKC alone does not make U+2011 a hyphen-minus: the dash rule does.
    assert unicodedata.normalize("NFKC", "\u2011") == "\u2010"
    # Positive controls: words, a leading mark, inner marks of two kinds stay.
    assert value_digest("Never bulk-insert into event") != value_digest(REJECTED)
    assert normalise_value("-x") == "-x" and normalise_value("a -> b?!") == "a -> b"
    assert normalise_value("Wait... then go!!") == "wait. then go"
    assert normalise_value("!!!") == "!"  # nothing but marks: kept, collapsed
    assert normalise_value("Really?!! \u2026 ok\u2026") == "really?! . ok"
    # Runs of marks that carry meaning in code and commands are kept.
    for meant, other in (("--force", "-force"), ("a == b", "a = b"), ("x && y", "x & y")):
        assert value_digest(f"Use {meant} here") != value_digest(f"Use {other} here")
    assert normalise_value("Call __init__ first") == "call __init__ first"


def test_dashes_are_category_pd_exactly() -> None:
    """The written-out list is Unicode 14.0's Pd (the Python of this project: later ones
    may add dashes, which then stay as they are, so that no stored digest moves)."""
    pd = {chr(p) for p in range(sys.maxunicode + 1) if unicodedata.category(chr(p)) == "Pd"}
    listed = set(normalise._DASHES) | {"-"}
    assert listed <= pd
    if unicodedata.unidata_version == "14.0.0":
        assert listed == pd
    for dash in normalise._DASHES:
        assert normalise_value(f"a{dash}b") == "a-b", hex(ord(dash))


MARKS = st.sampled_from(
    "!?.,;:-_*#~`'\"()[]{}<>/\\|=+&%$@^\u2011\u2014\u2026\u00a1\u00bf\u00d7\u2192"
)
# No lone surrogates (Cs): validate_value refuses them before any digest is taken, and UTF-8
# cannot encode them; drawn, they failed these properties at random.
CHARS = st.characters(blacklist_categories=("Cs",))
TEXT = st.text(st.one_of(MARKS, CHARS, st.sampled_from(" \t\n\u00a0\u200b")), max_size=60)


@given(TEXT)
@example("a!!\u0301")
@example("x \u2011\u2010- y")
def test_normalising_twice_is_normalising_once(text: str) -> None:
    once = normalise_value(text)
    assert normalise_value(once) == once
    assert value_digest(once) == value_digest(text)


@given(st.text(st.characters(max_codepoint=127), max_size=80))
def test_the_ascii_path_is_the_general_one(text: str) -> None:
    folded = normalise._folded(text)
    assert normalise._marks_folded(folded) == normalise._marks_folded_unicode(folded)
    assert normalise_value(text) == normalise._normalised_unicode(text)


@given(TEXT, st.text(st.one_of(MARKS, st.just(" ")), min_size=1, max_size=5))
def test_trailing_marks_and_runs_do_not_make_another_value(text: str, tail: str) -> None:
    core = normalise._marks_folded(normalise._folded(text))
    if not any(c.isalnum() for c in core):
        return  # nothing but marks (before the skeleton made some letters): those are the value
    assert value_digest(text + tail) == value_digest(text)
    doubled = "".join(c * 2 if c in "!?.,;" else c for c in text)
    assert value_digest(doubled) == value_digest(text)


@given(TEXT)
def test_value_digests_keep_every_older_digest(text: str) -> None:
    digests = value_digests(text)
    assert digests[0] == value_digest(text)
    assert len(set(digests)) == len(digests)  # de-duplicated
    assert _digest_of_steps_1_2(text) in digests  # stores written before this rule
    kept = normalise.digest_with_ignorables(text)
    assert kept is None or kept in digests  # and before ignorables left the digest


NO_MARKS = ("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Cs")


@given(st.text(st.characters(blacklist_categories=NO_MARKS), max_size=80))
def test_digests_of_values_without_marks_are_unchanged(text: str) -> None:
    folded = normalise._folded(text)
    if any(unicodedata.category(c)[0] in "PS" for c in folded):
        return  # NFKC made a mark of something (a ligature, a compatibility form)
    if skeleton(folded) != folded:
        return  # a confusable character: its skeleton is the value now (test_lookalikes)
    assert value_digest(text) == _digest_of_steps_1_2(text)
    assert value_digests(text)[0] == _digest_of_steps_1_2(text)


def test_a_store_written_before_the_rule_still_recognises_its_rows(tmp_path: Path) -> None:
    """A lesson and a tombstone whose digests the previous normalisation made: the value is
    still the lesson's (a sighting, not a version) and still refused."""
    path = tmp_path / "old.db"
    service = LessonService(SQLiteStore(path))
    agent = local_agent(session="agent-1")
    value = "Run the migrations check first."
    service.memory_write(agent, WriteParams(scope=S, key="k", value=value))
    old = _digest_of_steps_1_2(value)
    assert old != value_digest(value)
    raw = sqlite3.connect(path)
    (trigger,) = raw.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'lesson_versions_immutable'"
    ).fetchone()
    with raw:
        raw.execute("DROP TRIGGER lesson_versions_immutable")
        raw.execute("UPDATE lessons SET value_digest = ?", (old,))
        raw.execute("UPDATE lesson_versions SET value_digest = ?", (old,))
        raw.execute(trigger)
    raw.close()
    again = local_agent(session="agent-2")
    seen = service.memory_write(again, WriteParams(scope=S, key="k", value=value))
    assert (seen.result, seen.lesson.seen_count) == ("seen", 2)
    skip = "Skip the migrations check."
    with service.store.transaction(write=True, actor="user:local") as tx:
        tx.insert_tombstone(
            Tombstone(
                "00000000-0000-4000-8000-0000000000ab",
                "user:local",
                S,
                _digest_of_steps_1_2(skip),
                REASON,
                "user:reviewer",
                "2026-01-01T00:00:00.000000Z",
            )
        )
    with pytest.raises(LorestoreError) as refused:
        service.memory_write(agent, WriteParams(scope=S, key="skip", value=skip))
    assert refused.value.code == "rejected_value"
    done = service.memory_write(agent, WriteParams(scope=S, key="skip", value="Skip it never"))
    assert done.result == "created"  # the control
    service.store.close()


# --- the other rules, each in one place ---------------------------------------------------


def test_most_specific_binding_is_one_rule() -> None:
    scope = parse_scope("branch::acme/app::main")
    bound = ["repo::acme/*", "repo::acme/app", "branch::acme/app::*", "global"]
    assert patterns.most_specific(bound, scope, lambda p: p) == "repo::acme/app"
    assert patterns.most_specific(["repo::acme/*", "global"], scope, lambda p: p) == (
        "repo::acme/*"
    )
    assert patterns.most_specific(["repo::other/*"], scope, lambda p: p) is None  # control


def test_storage_imports_nothing_of_auth() -> None:
    root = Path(__file__).parents[2] / "src" / "lorestore" / "storage"
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "lorestore.auth" not in text, path
    assert "scope_allowed" not in (root.parent / "auth" / "tokens.py").read_text()


def test_portable_imports_nothing_of_storage_rows() -> None:
    """The interchange format depends on core and the storage protocol, not on how rows
    are stored (its JSON text is ``core.jsontext.dumps``)."""
    root = Path(__file__).parents[1] / "src" / "lorestore" / "portable"
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "lorestore.storage.rows" not in text, path
        assert "from lorestore.storage import rows" not in text, path


def test_every_trust_change_is_a_transition(service: LessonService) -> None:
    """Sightings corroborate, a new value revises, accepting a revision verifies: each
    through ``core.trust.transition`` (a refused transition is a conflict, never a silent
    change), and each leaves the trust it set in its audit event."""
    for n in range(3):
        result = service.memory_write(
            local_agent(session=f"agent-{n}"), WriteParams(scope=S, key="k", value="Same lesson")
        )
    assert result.lesson.trust == "corroborated"
    updated = service.memory_write(PERSON, WriteParams(scope=S, key="k", value="New lesson"))
    assert (updated.result, updated.lesson.trust) == ("updated", "candidate")
    service.memory_verify(PERSON, VerifyParams(scope=S, key="k"))
    service.memory_write(PERSON, WriteParams(scope=S, key="k", value="Newer lesson"))
    accepted = service.memory_verify(PERSON, VerifyParams(scope=S, key="k", revision=True))
    assert accepted.lesson.trust == "verified"
    events = service.memory_audit(PERSON, AuditParams(scope=S, key="k")).events
    trusts = [(e.action, (e.detail or {}).get("trust")) for e in reversed(events)]
    assert trusts == [
        ("write.created", "candidate"),
        ("write.seen", "candidate"),
        ("write.seen", "corroborated"),
        ("write.updated", "candidate"),
        ("verify", "verified"),
        ("write.proposed", "verified"),
        ("verify.revision", "verified"),
    ]
    assert service.audit_verify(PERSON, NoParams()).ok  # the chain the one module built


def test_the_audit_event_is_stored_and_hashed_as_before() -> None:
    """The one event type gives the stored form the two builders gave (every chained field,
    prev_hash, hash), hashed as the chain always was: existing chains still verify."""
    entry = AuditEntry(
        owner="user:local",
        at="2026-01-01T00:00:00.000000Z",
        actor="user:local",
        action="import.lesson",
        scope=S,
        key="k",
        lesson_id="ef1d4adb-0000-4000-8000-000000000001",
        after_version=1,
        after_digest=value_digest(REJECTED),
        detail={"format": "jsonl", "line": 2, "trust": "candidate"},
    )
    stored = entry.chained(GENESIS)
    content = {name: stored[name] for name in CHAINED_FIELDS}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert set(stored) == {*CHAINED_FIELDS, "prev_hash", "hash"}
    assert stored["prev_hash"] == GENESIS
    assert stored["hash"] == hashlib.sha256((GENESIS + canonical).encode()).hexdigest()
    assert entry.chained(stored["hash"])["hash"] != stored["hash"]  # the chain moves on
    # The chained fields are listed once (AuditEntry's); the read model adds id and hash only,
    # and the columns are the same list in the same order.
    assert CHAINED_FIELDS == (
        "owner", "at", "actor", "action", "scope", "key", "lesson_id", "before_version",
        "after_version", "before_digest", "after_digest", "reason", "detail",
    )  # fmt: skip
    assert set(AuditEvent.model_fields) == {"id", *CHAINED_FIELDS, "hash"}
    assert (*CHAINED_FIELDS, "prev_hash", "hash") == AUDIT_COLUMNS
