"""Scope patterns: a scope, or a scope with ``*`` wildcards (``repo::acme/*``), as tokens are
confined by and scope bindings route by; and which binding is the most specific for a scope
(every operation, and ``lorestore migrate``, routes a scope by that one)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fnmatch import fnmatchcase
from typing import TypeVar

from lorestore.core.errors import LorestoreError
from lorestore.core.scope import Scope, parse_scope

T = TypeVar("T")


def normalise_pattern(pattern: str) -> str:
    """A scope pattern is a scope, or a scope with ``*`` wildcards (``repo::acme/*``)."""
    text = pattern.strip().lower()
    if "*" not in text:
        return parse_scope(text).text
    probe = text.replace("*", "x")
    try:
        parse_scope(probe)
    except LorestoreError as exc:
        raise LorestoreError(
            "invalid_scope",
            f"scope pattern {pattern!r} is not a scope with wildcards",
            hint='e.g. "repo::acme/*" or "branch::acme/app::*"',
        ) from exc
    return text


def scope_allowed(patterns: tuple[str, ...] | None, scope: Scope) -> bool:
    """Whether a scope matches one of ``patterns`` (None: no confinement, every scope does).
    A branch scope is covered by a pattern that covers its repository."""
    if patterns is None:
        return True
    candidates = [scope.text]
    if scope.kind == "branch":
        candidates.append(f"repo::{scope.repo}")
    return any(fnmatchcase(c, p) for p in patterns for c in candidates)


def pattern_within(pattern: str, patterns: tuple[str, ...]) -> bool:
    """Whether every scope ``pattern`` matches is one that ``patterns`` allow: the pattern,
    read as text, matches one of them (a ``*`` of its own falls inside theirs), or it is a
    branch pattern of a repository they cover."""
    candidates = [pattern]
    if pattern.startswith("branch::"):
        repo = pattern.removeprefix("branch::").split("::", 1)[0]
        if "*" not in repo:
            candidates.append(f"repo::{repo}")
    return any(fnmatchcase(c, p) for p in patterns for c in candidates)


def patterns_overlap(a: str, b: str) -> bool:
    """Whether some scope is matched by both patterns, compared as patterns (a ``*`` in either
    may stand for anything the other's text or ``*`` does), a repository pattern covering the
    branches of the repositories it matches: ``branch::acme/*::main`` meets ``repo::acme/*``,
    and ``repo::acme/*`` meets ``repo::acme/app``, whichever is given first."""
    return any(globs_meet(x, y) for x in _claims(a) for y in _claims(b))


def _claims(pattern: str) -> tuple[str, ...]:
    if pattern.startswith("repo::"):
        return pattern, "branch::" + pattern.removeprefix("repo::") + "::*"
    return (pattern,)


def globs_meet(p: str, q: str) -> bool:
    """Whether one text is matched by both globs (``*`` matches any text, other characters
    themselves). ``reach[i][j]``: the first ``i`` characters of ``p`` and ``j`` of ``q`` can
    spell the same text; PostgreSQL's lorestore_globs_meet is this table, line for line."""
    m, n = len(p), len(q)
    reach = [[False] * (n + 1) for _ in range(m + 1)]
    reach[0][0] = True
    for i in range(m + 1):
        for j in range(n + 1):
            if reach[i][j]:
                continue
            reach[i][j] = (
                (i > 0 and p[i - 1] == "*" and reach[i - 1][j])  # p's star ends here
                or (j > 0 and i < m and p[i] == "*" and reach[i][j - 1])  # ... eats q[j-1]
                or (j > 0 and q[j - 1] == "*" and reach[i][j - 1])
                or (i > 0 and j < n and q[j] == "*" and reach[i - 1][j])
                or (
                    i > 0
                    and j > 0
                    and "*" not in (p[i - 1], q[j - 1])
                    and p[i - 1] == q[j - 1]
                    and reach[i - 1][j - 1]
                )
            )
    return reach[m][n]


def specificity(pattern: str) -> tuple[bool, int]:
    """How a pattern ranks among those covering one scope, most specific first: a pattern
    without a wildcard before one with, then the longer before the shorter."""
    return ("*" in pattern, -len(pattern))


def most_specific(items: Iterable[T], scope: Scope, pattern: Callable[[T], str]) -> T | None:
    """Of ``items`` (bindings, each with its ``pattern``), the one whose pattern covers
    ``scope`` most specifically: the binding that routes it; None when none covers it. On a
    tie the first given wins."""
    matches = [item for item in items if scope_allowed((pattern(item),), scope)]
    return min(matches, key=lambda item: specificity(pattern(item)), default=None)
