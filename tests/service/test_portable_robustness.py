"""Inputs at the edges of what a store can hold, through the service on both backends and
through the CLI and MCP: a time whose UTC form falls outside the years 1 to 9999, a number too
large for a float, integers too large for PostgreSQL's integer columns, a malformed
`depends_on`, a kept record of an unknown type whose numbers jsonb respells, and a lesson in
two export states at once. Each is reported as what it is (an invalid line, `invalid_time`)
while the rest lands, and each refusal has its positive control beside it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Cli, Clock
from tests.portable import LOCAL, export_lines, header, import_lines, lesson, line
from tests.stdio import Tools, run_mcp

from lorestore.core.errors import LorestoreError
from lorestore.core.jsontext import dumps
from lorestore.models import AuditParams, NoParams, ReadParams, WriteParams
from lorestore.portable import jsonl
from lorestore.portable.models import ExportParams
from lorestore.service import LessonService

S = "repo::acme/app"
INT_MAX = 2**31 - 1
BEFORE_YEAR_1 = "0001-01-01T00:00:00+01:00"  # 31 December of year 0 in UTC
AFTER_YEAR_9999 = "9999-12-31T23:30:00-01:00"  # 1 January of year 10000 in UTC


def _invalid(service: LessonService, bad: list[bytes]) -> tuple[Any, list[tuple[int, str]]]:
    """Import each bad line between two good lessons; the problems as (line, message)."""
    lines = [header(), line(lesson("first", "the first lesson"))]
    lines += [*bad, line(lesson("last", "the last lesson"))]
    result = import_lines(service, lines)
    assert {p.code for p in result.problems} == {"invalid_record"}
    return result, [(p.line or 0, p.message) for p in result.problems]


def _values(service: LessonService, *keys: str) -> list[str]:
    return [service.memory_read(LOCAL, ReadParams(scope=S, key=k)).lesson.value for k in keys]


# --- times outside the years 1 to 9999 ------------------------------------------------------


def test_a_time_outside_the_years_1_to_9999_is_an_invalid_line(service: LessonService) -> None:
    result, problems = _invalid(
        service,
        [
            line(lesson("early", "created before year 1", created_at=BEFORE_YEAR_1)),
            line(lesson("late", "expires after year 9999", expires_at=AFTER_YEAR_9999)),
            line(lesson("vlate", "a version after 9999", versions=[_v(1, AFTER_YEAR_9999)])),
        ],
    )
    assert [n for n, _ in problems] == [3, 4, 5]
    assert all("invalid_time" in m and "years 1 to 9999" in m for _, m in problems)
    assert "created_at" in problems[0][1] and "expires_at" in problems[1][1]
    assert result.lessons.added == 2 and _values(service, "first", "last") == [
        "the first lesson",
        "the last lesson",
    ]
    # The control: the same instants an hour inside the range land, normalised to UTC.
    edge = import_lines(
        service,
        [
            header(),
            line(lesson("e", "at the edge", created_at="0001-01-01T00:00:00-01:00")),
            line(lesson("l", "at the end", expires_at="9999-12-31T22:30:00-01:00")),
        ],
    )
    assert edge.lessons.added == 2 and edge.invalid == 0
    read = service.memory_read(LOCAL, ReadParams(scope=S, key="e")).lesson
    assert read.created_at == "0001-01-01T01:00:00.000000Z"
    read = service.memory_read(LOCAL, ReadParams(scope=S, key="l")).lesson
    assert read.expires_at == "9999-12-31T23:30:00.000000Z"


def _v(number: int, recorded_at: str, value: str = "a version after 9999") -> dict[str, Any]:
    return {
        "version": number,
        "state": "accepted",
        "value": value,
        "recorded_at": recorded_at,
        "actor": "user:local",
    }


@pytest.mark.parametrize("moment", [BEFORE_YEAR_1, AFTER_YEAR_9999])
def test_a_time_filter_outside_the_range_is_invalid_time(
    service: LessonService, moment: str
) -> None:
    service.memory_write(LOCAL, WriteParams(scope=S, key="k", value="a lesson"))
    calls = {
        "read as_of": lambda t: service.memory_read(LOCAL, ReadParams(scope=S, key="k", as_of=t)),
        "read valid_at": lambda t: service.memory_read(
            LOCAL, ReadParams(scope=S, key="k", valid_at=t)
        ),
        "audit since": lambda t: service.memory_audit(LOCAL, AuditParams(since=t)),
        "export since": lambda t: service.memory_export(LOCAL, ExportParams(since=t)),
        "export until": lambda t: service.memory_export(LOCAL, ExportParams(until=t)),
    }
    for name, call in calls.items():
        with pytest.raises(LorestoreError) as bad:
            call(moment)
        assert bad.value.code == "invalid_time", name
        assert bad.value.hint and "0001-01-01T00:00:00Z" in bad.value.hint
        call("2026-06-01T00:00:00+01:00")  # the control: an ordinary offset is fine


def test_the_cli_exits_2_for_a_time_outside_the_range(cli: Cli) -> None:
    cli.ok("write", "global", "k", "a lesson")
    for *args, bad in (
        ("read", "global", "k", "--as-of", BEFORE_YEAR_1),
        ("export", "--since", BEFORE_YEAR_1),
        ("audit", "--since", "9999-12-31T23:59:59-01:00"),
    ):
        refused = cli(*args, bad, "--json")
        assert refused.exit_code == 2, refused.stderr
        assert refused.error()["code"] == "invalid_time"
        assert cli(*args, "2100-01-01T00:00:00+01:00", "--json").exit_code == 0  # the control


def test_mcp_memory_read_reports_an_out_of_range_as_of_as_a_tool_error(home: Path) -> None:
    async def scenario(tools: Tools) -> None:
        await tools.ok("memory_write", scope="global", key="k", value="a lesson")
        error = await tools.error("memory_read", scope="global", key="k", as_of=BEFORE_YEAR_1)
        assert error["code"] == "invalid_time" and "as_of" in error["message"]
        kept = await tools.ok("memory_read", scope="global", key="k", as_of="2100-01-01")
        assert kept["lesson"]["value"] == "a lesson"  # the control

    run_mcp(home, scenario)


# --- numbers -------------------------------------------------------------------------------


def test_a_number_too_large_for_a_float_is_an_invalid_line(service: LessonService) -> None:
    big = line(lesson("big", "an unknown field too large", x_big=1))
    result, problems = _invalid(
        service,
        [
            big.replace(b'"x_big":1', b'"x_big":1e400'),
            big.replace(b'"x_big":1', b'"x_big":[-1e999]'),
        ],
    )
    assert [n for n, _ in problems] == [3, 4]
    assert "1e400" in problems[0][1] and "-1e999" in problems[1][1]
    assert result.lessons.added == 2
    # The control: a large finite float lands, and the export is JSON that imports again.
    fits = import_lines(service, [header(), big.replace(b'"x_big":1', b'"x_big":1e300')])
    assert fits.lessons.added == 1
    exported = export_lines(service)
    assert not any(b"Infinity" in x or b"NaN" in x for x in exported)
    again = import_lines(service, exported)
    assert (again.invalid, again.lessons.unchanged) == (0, 3)


def test_nothing_writes_nan_or_infinity() -> None:
    for bad in (float("inf"), float("-inf"), float("nan")):
        with pytest.raises(ValueError):
            jsonl.encode({"x": [bad]})
        with pytest.raises(ValueError):
            dumps({"x": bad})
    assert jsonl.encode({"x": 1e300}) == b'{"x":1e+300}\n'  # the control
    assert dumps({"x": -0.0}) == '{"x":-0.0}'


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"seen_count": 10**30}, "seen_count"),
        ({"seen_count": 3_000_000_000}, "seen_count"),
        ({"version": 10**30}, "version"),
        ({"version": INT_MAX + 1}, "version"),
        ({"versions": [_v(1, "2026-01-01", "v"), _v(INT_MAX + 1, "2026-01-02", "w")]}, "version"),
        ({"depends_on": [{"path": ["a"], "blob": "0" * 40}]}, "depends_on"),
        ({"depends_on": [{"path": {"a": 1}, "blob": "0" * 40}]}, "depends_on"),
        ({"depends_on": ["a.py"]}, "depends_on"),
    ],
)
def test_a_value_no_backend_can_hold_is_an_invalid_line(
    service: LessonService, fields: dict[str, Any], why: str
) -> None:
    result, problems = _invalid(service, [line(lesson("bad", "v", **fields))])
    assert [n for n, _ in problems] == [3] and why in problems[0][1]
    assert result.lessons.added == 2  # the lessons on either side land


def test_an_address_too_big_for_the_index_is_an_invalid_line(service: LessonService) -> None:
    # memory_write refuses it (validate_address); an import must too, not lose its batch.
    big = lesson("\U00020000" * 512, "v", scope="branch::acme/app::" + "\u00e9" * 200)
    result, problems = _invalid(service, [line(big)])
    assert [n for n, _ in problems] == [3] and "bytes" in problems[0][1]
    assert result.lessons.added == 2  # the lessons on either side land


def test_the_largest_integers_postgresql_holds_land_on_both_backends(
    service: LessonService,
) -> None:
    dependency = {"path": "src/app.py", "blob": "0" * 40}
    record = lesson(
        "max",
        "v",
        version=INT_MAX,
        seen_count=INT_MAX,
        depends_on=[dependency],
        versions=[_v(1, "2026-01-01", "old"), _v(INT_MAX, "2026-01-02", "v")],
    )
    record["versions"][0]["state"] = "superseded"
    result = import_lines(service, [header(), line(record)])
    assert (result.invalid, result.lessons.added) == (0, 1), result.problems
    read = service.memory_read(LOCAL, ReadParams(scope=S, key="max")).lesson
    assert (read.version, read.seen_count) == (INT_MAX, INT_MAX)
    again = import_lines(service, export_lines(service))
    assert again.lessons.unchanged == 1


# --- kept records of unknown types ----------------------------------------------------------


def test_a_kept_record_is_kept_once_whatever_the_backend_does_to_its_numbers(
    service: LessonService,
) -> None:
    raw = b'{"type":"future_thing","payload":[1.5,-0.0,1e20,1e-7,12.0,7]}'
    stored = b'{"type":"future_thing","payload":[1.5,0.0,100000000000000000000,1e-07,12.0,7]}'
    first = import_lines(service, [header(), raw])
    assert first.unknown.added == 1
    exported = export_lines(service)
    assert exported[1:] == [stored]  # the same line from both backends
    for again in (exported, [header(), raw]):
        result = import_lines(service, again)
        assert (result.unknown.added, result.unknown.unchanged) == (0, 1)
    assert export_lines(service)[1:] == [stored]
    other = import_lines(service, [header(), raw.replace(b"1.5", b"2.5")])
    assert other.unknown.added == 1  # the control: another record is kept beside it
    assert len(export_lines(service)) == 3


# --- export states --------------------------------------------------------------------------


def test_a_lesson_in_two_states_is_exported_under_each(
    service: LessonService, clock: Clock
) -> None:
    expiry = "2026-02-01T00:00:00Z"
    result = import_lines(
        service,
        [
            header(),
            line(lesson("both", "rejected and expired", trust="rejected", expires_at=expiry)),
            line(lesson("expired", "only expired", expires_at=expiry)),
            line(lesson("rejected", "only rejected", trust="rejected")),
            line(lesson("active", "still active")),
        ],
    )
    assert result.lessons.added == 4
    clock.advance(days=60)
    (counts,) = service.memory_scopes(LOCAL, NoParams()).scopes
    assert (counts.active, counts.expired, counts.rejected) == (1, 1, 2)  # "both": rejected

    def keys(*states: str) -> list[str]:
        rows = [json.loads(x) for x in export_lines(service, states=list(states))[1:]]
        return sorted(r["key"] for r in rows if r["type"] == "lesson")

    assert keys("expired") == ["both", "expired"]
    assert keys("rejected") == ["both", "rejected"]
    assert keys("expired", "rejected") == ["both", "expired", "rejected"]
    assert keys("active") == ["active"]  # the control: neither expired nor rejected
    assert keys("archived") == []


# --- how lines are written ------------------------------------------------------------------

# Every character a stored string can hold (no lone surrogates, no NUL), quotes, backslashes
# and control characters among them.
EVERY_CHARACTER = "".join(chr(c) for c in range(1, 0x110000) if not 0xD800 <= c <= 0xDFFF)


def test_a_lesson_without_extension_fields_is_written_as_the_json_module_writes_it(
    service: LessonService,
) -> None:
    """Lessons of lorestore's own fields are written by pydantic-core (the fast path of an
    export); the text must be exactly the json module's, whatever the characters."""
    tricky = 'quote " backslash \\ tab \t line\nbreak \x1f \x7f \u2028 \U0001f600 é'
    import_lines(
        service,
        [
            header(),
            line(lesson("plain", tricky, tags=["t\u00e9g"], source={"pr": 12, "agent": "a\x01"})),
            line(lesson("ext", "a lesson with a foreign float", x_score=1e-7)),
        ],
    )
    by_key = {json.loads(raw)["key"]: raw for raw in export_lines(service)[1:]}
    plain = json.loads(by_key["plain"])
    assert plain["value"] == tricky
    as_json_module = json.dumps(plain, ensure_ascii=False, separators=(",", ":"))
    assert by_key["plain"] == as_json_module.encode()
    assert b'"x_score":1e-07' in by_key["ext"]  # the control: a foreign float keeps its spelling
    record = jsonl.PlainRecord(value=EVERY_CHARACTER, n=[1, True, None, 2**40])
    assert jsonl.encode(record) == jsonl.encode(dict(record))


def test_an_archived_lesson_without_archived_at_takes_its_updated_at(
    service: LessonService,
) -> None:
    """The purge sweep counts an archived lesson's retention from archived_at: without it the
    lesson would never be purged, so it takes the record's updated_at."""
    updated = "2026-01-02T00:00:00.000000Z"
    record = lesson("timeless", "archived, but when?", status="archived", updated_at=updated)
    result = import_lines(service, [header(), line(record)])
    assert result.lessons.added == 1 and not result.problems
    (kept,) = [r for r in export_lines_of(service) if r.get("key") == "timeless"]
    assert (kept["status"], kept["archived_at"]) == ("archived", updated)
    # The control: a time given is kept.
    dated = lesson("dated", "archived then", status="archived", archived_at=updated)
    assert import_lines(service, [header(), line(dated)]).lessons.added == 1


def export_lines_of(service: LessonService) -> list[dict[str, Any]]:
    return [json.loads(x) for x in export_lines(service)[1:]]
