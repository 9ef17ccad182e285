"""Scope patterns compared as patterns: two globs meet when one text matches both, checked
against every short text over a small alphabet, and PostgreSQL's copy of the rule
(lorestore_globs_meet, lorestore_patterns_overlap) answers the same on the same pairs."""

from __future__ import annotations

import itertools
from fnmatch import fnmatchcase

import psycopg
from tests.pg import Template

from lorestore.core.patterns import globs_meet, patterns_overlap

GLOBS = ["".join(t) for n in range(5) for t in itertools.product("ab*", repeat=n)]
TEXTS = ["".join(t) for n in range(7) for t in itertools.product("ab", repeat=n)]


def test_globs_meet_exactly_when_some_text_matches_both() -> None:
    for p, q in itertools.product(GLOBS, GLOBS):
        some = any(fnmatchcase(t, p) and fnmatchcase(t, q) for t in TEXTS)
        assert globs_meet(p, q) == some, (p, q)


PAIRS = [
    ("branch::acme/*::main", "repo::acme/*", True),
    ("branch::acme/app*::release", "repo::acme/*", True),
    ("repo::acme/*", "repo::acme/app", True),
    ("repo::acme/app", "branch::acme/app::main", True),
    ("repo::acme-web/*", "repo::acme/*", False),
    ("project::payments", "repo::payments/*", False),
    ("branch::acme/app::main", "branch::acme/app::dev", False),
]


def test_patterns_overlap_in_both_directions() -> None:
    for a, b, expected in PAIRS:
        assert patterns_overlap(a, b) is expected, (a, b)
        assert patterns_overlap(b, a) is expected, (b, a)


def test_postgres_keeps_the_same_rule(pg_template: Template, pg_database: str) -> None:
    pairs = list(itertools.product(GLOBS[:40], GLOBS[:40]))
    with psycopg.connect(pg_template.app_url(pg_database)) as conn:
        got = conn.execute(
            "SELECT lorestore_globs_meet(p, q) FROM unnest(%s::text[], %s::text[]) AS u(p, q)",
            [[p for p, _ in pairs], [q for _, q in pairs]],
        ).fetchall()
        assert [row[0] for row in got] == [globs_meet(p, q) for p, q in pairs]
        for a, b, expected in PAIRS:
            row = conn.execute("SELECT lorestore_patterns_overlap(%s, %s)", [a, b]).fetchone()
            assert row == (expected,), (a, b)
