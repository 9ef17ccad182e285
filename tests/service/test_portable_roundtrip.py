"""The interchange format round-trips: any store content (active, archived, expired, rejected
with tombstones, verified with history and a pending proposal, disputed, scope policies,
lessons carrying unknown fields at every level, records of unknown types) exported, imported
into an empty store on the other backend, and exported again, gives the same records line
for line; only the header's export time differs. Every line validates against the shipped
JSON Schema, and the unknown fields come back where they were."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import Clock
from tests.pg import Pool
from tests.portable import LOCAL, export_lines, import_lines, lesson, line, open_store

from lorestore.core.normalise import first_invisible
from lorestore.models import (
    ChangeParams,
    DisputeParams,
    PolicyParams,
    ProjectAddParams,
    RejectParams,
    VerifyParams,
    WriteParams,
)
from lorestore.portable import schema_text
from lorestore.service import LessonService

SCOPES = ("global", "project::billing", "repo::acme/app", "branch::acme/app::feature/login")
ENDINGS = (
    "active",
    "archived",
    "expired",
    "rejected",
    "lifted",
    "verified",
    "proposal",
    "disputed",
)
VALIDATOR = jsonschema.Draft202012Validator(json.loads(schema_text()))

text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30)
# A new key holds no invisible character (refused: issue 19, item 12).
key_text = text.filter(lambda k: first_invisible(k) is None)
tag = st.from_regex(r"[a-z0-9][a-z0-9.-]{0,10}", fullmatch=True)
# JSON values an unknown field may hold. PostgreSQL's jsonb keeps numbers as decimals, so
# -0.0 and floats of 1e16 or more come back changed (docs/format.md); they are left out.
number = st.floats(-1e15, 1e15, allow_nan=False).filter(lambda f: math.copysign(1, f) > 0 or f)
scalar = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | number | text
json_value = st.recursive(
    scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)
unknown_name = text.map(lambda s: "x_" + s)


@dataclass(frozen=True)
class Plan:
    scope: str
    key: str
    values: tuple[str, ...]
    tags: tuple[str, ...]
    ending: str


@st.composite
def plans(draw: st.DrawFn) -> list[Plan]:
    found = []
    for i in range(draw(st.integers(1, 6))):
        count = draw(st.integers(1, 3))
        # Distinct values: a rejection would otherwise reach another plan's lesson.
        values = tuple(f"lesson {i}.{j}: {draw(text)}" for j in range(count))
        found.append(
            Plan(
                scope=draw(st.sampled_from(SCOPES)),
                key=f"{draw(key_text)} {i}",
                values=values,
                tags=tuple(draw(st.lists(tag, max_size=3))),
                ending=draw(st.sampled_from(ENDINGS)),
            )
        )
    return found


@st.composite
def foreign_records(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Records written by another tool: a lesson with unknown fields at every level, a
    tombstone and a scope policy with some, and a record of an unknown type."""
    extra = st.dictionaries(unknown_name, json_value, min_size=1, max_size=2)
    record = lesson(
        "from elsewhere",
        "A lesson another tool wrote",
        scope="project::billing",
        version=2,
        source={"agent": "other", **draw(extra)},
        review={"by": "user:local", "at": "2026-01-02T00:00:00.000000Z", **draw(extra)},
        trust="verified",
        depends_on=[{"path": "a/b.py", "blob": "b" * 40, **draw(extra)}],
        versions=[
            {
                "version": 1,
                "state": "accepted",
                "value": "first",
                "recorded_at": "2025-12-01",
                "actor": "user:x",
                **draw(extra),
            },
            {
                "version": 2,
                "state": "accepted",
                "value": "A lesson another tool wrote",
                "recorded_at": "2026-01-01T12:00:00Z",
                "actor": "user:x",
                "source": {"agent": "other", **draw(extra)},
            },
        ],
        **draw(extra),
    )
    tombstone = {
        "type": "tombstone",
        "id": "0b7e4c2e-3c43-4c0a-9f1e-2b1d2f6e9a01",
        "scope": "global",
        "digest": "a" * 64,
        "reason": "wrong",
        "actor": "user:x",
        "time": "2025-11-01",
        **draw(extra),
    }
    policy = {
        "type": "scope_policy",
        "scope": "repo::other/app",
        "revision_policy": "files",
        "require_review": True,
        "updated_at": "2025-10-01",
        "updated_by": "user:x",
        **draw(extra),
    }
    unknown = {"type": "x_" + draw(text), "scope": draw(st.sampled_from(SCOPES)), **draw(extra)}
    project = {
        "type": "project",
        "scope": "project::billing",
        "repo": "other/api",
        "added_at": "2025-10-02",
        "added_by": "user:x",
        **draw(extra),
    }
    return [record, tombstone, policy, unknown, project]


def build(service: LessonService, clock: Clock, plan: list[Plan]) -> None:
    for p in plan:
        for value in p.values:
            ttl = 1 if p.ending == "expired" else None
            service.memory_write(
                LOCAL,
                WriteParams(scope=p.scope, key=p.key, value=value, tags=list(p.tags), ttl_days=ttl),
            )
            clock.advance(seconds=1)
        address = {"scope": p.scope, "key": p.key}
        if p.ending == "archived":
            service.memory_archive(LOCAL, ChangeParams(**address))
        elif p.ending in ("rejected", "lifted"):
            service.memory_reject(LOCAL, RejectParams(**address, reason="wrong"))
            if p.ending == "lifted":
                service.memory_reject(LOCAL, RejectParams(**address, reason="fine", undo=True))
        elif p.ending in ("verified", "proposal"):
            service.memory_verify(LOCAL, VerifyParams(**address, note="checked"))
            if p.ending == "proposal":
                service.memory_write(LOCAL, WriteParams(**address, value=f"{p.values[0]} (new)"))
        elif p.ending == "disputed":
            service.memory_dispute(LOCAL, DisputeParams(**address, reason="unsure"))
        clock.advance(seconds=1)
    service.memory_policy(LOCAL, PolicyParams(scope="repo::acme/app", revision_policy="commit"))
    service.memory_policy(LOCAL, PolicyParams(scope="*", require_review=True))
    service.project_add(LOCAL, ProjectAddParams(name="billing", repos=["acme/app", "acme/api"]))
    clock.advance(days=2)  # the lessons written with a one-day TTL are expired now


def _same_header(first: bytes, second: bytes) -> None:
    a, b = json.loads(first), json.loads(second)
    assert a.pop("exported_at") and b.pop("exported_at")
    assert a == b


@pytest.mark.parametrize(("source", "target"), [("sqlite", "postgres"), ("postgres", "sqlite")])
def test_export_import_export_is_the_same_line_for_line(
    source: str, target: str, pg_pool: Pool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("roundtrip")

    @given(plan=plans(), extras=foreign_records())
    @settings(
        max_examples=12,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    def round_trip(plan: list[Plan], extras: list[dict[str, Any]]) -> None:
        with open_store(source, tmp, pg_pool) as (_, first, clock):
            build(first, clock, plan)
            kept = import_lines(first, [line(r) for r in extras])
            assert kept.invalid == 0 and kept.lessons.added == 1, kept.problems
            exported = export_lines(first)
        with open_store(target, tmp, pg_pool) as (_, second, _):
            result = import_lines(second, exported)
            assert {p.code for p in result.problems} <= {"unknown_type"}, result.problems
            again = export_lines(second)
        _same_header(exported[0], again[0])
        assert again[1:] == exported[1:]
        for raw in exported:
            VALIDATOR.validate(json.loads(raw))
        _unknown_fields_came_back(extras, exported)

    round_trip()


def _unknown_fields_came_back(extras: list[dict[str, Any]], exported: list[bytes]) -> None:
    """Each unknown field is written back at its level, with its value."""
    records = [json.loads(raw) for raw in exported[1:]]
    written = next(r for r in records if r.get("key") == "from elsewhere")
    given = extras[0]
    for name, value in given.items():
        if name.startswith("x_"):
            assert written[name] == value
    for level in ("source", "review"):
        for name, value in given[level].items():
            assert written[level][name] == value
    for name, value in given["depends_on"][0].items():
        assert written["depends_on"][0][name] == value
    for mine, theirs in zip(written["versions"], given["versions"], strict=True):
        assert {k: v for k, v in mine.items() if k.startswith("x_")} == {
            k: v for k, v in theirs.items() if k.startswith("x_")
        }
    unknown = next(r for r in records if r["type"] == extras[3]["type"])
    assert unknown == extras[3]
    for kind in ("tombstone", "scope_policy", "project"):
        theirs = next(r for r in extras if r["type"] == kind)
        # A tombstone is matched by its id: the plan may tombstone another value in the same
        # scope, and export orders records by id, so matching by scope picked either one.
        mine = next(
            r
            for r in records
            if r["type"] == kind
            and (
                r["id"] == theirs["id"]
                if "id" in theirs
                else r["scope"] == theirs["scope"] and r.get("repo") == theirs.get("repo")
            )
        )
        assert {k: v for k, v in mine.items() if k.startswith("x_")} == {
            k: v for k, v in theirs.items() if k.startswith("x_")
        }


def test_the_schema_refuses_what_import_refuses(tmp_path: Path) -> None:
    """Positive control for the schema check above: it is not a schema that accepts anything."""
    good = lesson("k", "v")
    VALIDATOR.validate(good)
    for broken in (
        {**good, "id": 7},
        {k: v for k, v in good.items() if k != "scope"},
        {**good, "trust": "trusted"},
        {"type": "tombstone", "digest": "short"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            VALIDATOR.validate(broken)
