"""What an export selects and how it is written: the filters (scope patterns, lesson states,
a time window, the reader's own token scopes and permission), and the export itself, a
header plus pages of records produced lazily, each page read in its own short transaction."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lorestore.auth.actor import Actor
from lorestore.core.errors import LorestoreError
from lorestore.core.patterns import normalise_pattern, pattern_within, scope_allowed
from lorestore.core.records import Lesson
from lorestore.core.scope import parse_scope
from lorestore.core.timestamps import normalise_ts
from lorestore.portable.jsonl import encode
from lorestore.portable.models import ExportParams, ExportSummary, State


def lesson_states(lesson: Lesson, now: str) -> frozenset[State]:
    """The states a filter sees, as the scope inventory counts them: an archived lesson is
    archived only; a rejected lesson past its expiry is both rejected and expired."""
    if lesson.status == "archived":
        return frozenset({"archived"})
    states: set[State] = set()
    if lesson.trust == "rejected":
        states.add("rejected")
    if lesson.expires_at is not None and lesson.expires_at <= now:
        states.add("expired")
    return frozenset(states or {"active"})


@dataclass(frozen=True, slots=True)
class ExportFilter:
    patterns: tuple[str, ...] | None
    states: frozenset[State] | None
    since: str | None
    until: str | None
    now: str
    token_scopes: tuple[str, ...] | None
    reviewer: bool

    @classmethod
    def of(cls, p: ExportParams, actor: Actor, now: str) -> ExportFilter:
        since = normalise_ts(p.since, field="since")
        until = normalise_ts(p.until, field="until")
        if since and until and until <= since:
            raise LorestoreError("invalid_time", "until must be after since")
        patterns = None if p.scopes is None else tuple(normalise_pattern(s) for s in p.scopes)
        if patterns == ():
            raise LorestoreError(
                "invalid_scope",
                "an empty scope list would export nothing",
                hint="omit --scope to export every scope you may read",
            )
        if actor.scopes is not None and patterns is not None:
            beyond = [s for s in patterns if not pattern_within(s, actor.scopes)]
            if beyond:  # as every read refuses a scope beyond the token, not an empty answer
                raise LorestoreError(
                    "forbidden",
                    f"this token does not cover {', '.join(beyond)}",
                    hint="use a token whose scope patterns include it",
                    details={"scopes": beyond, "token_scopes": list(actor.scopes)},
                )
        states = None if p.states is None else frozenset(p.states)
        return cls(patterns, states, since, until, now, actor.scopes, actor.can("review"))

    @property
    def narrowed(self) -> bool:
        """Whether a state or time filter applies (records without either are left out)."""
        return self.states is not None or self.since is not None or self.until is not None

    def scope_ok(self, scope: str | None) -> bool:
        if scope is None:
            return self.patterns is None and self.token_scopes is None
        if scope == "*":  # an owner-wide default: beyond a scope-confined token's reach
            return self.patterns is None and self.token_scopes is None
        parsed = parse_scope(scope)
        return scope_allowed(self.token_scopes, parsed) and scope_allowed(self.patterns, parsed)

    def time_ok(self, at: str) -> bool:
        return (self.since is None or at >= self.since) and (self.until is None or at < self.until)

    def lesson_ok(self, lesson: Lesson) -> bool:
        if not self.scope_ok(lesson.scope) or not self.time_ok(lesson.updated_at):
            return False
        return self.states is None or not self.states.isdisjoint(lesson_states(lesson, self.now))


@dataclass
class Export:
    """An export in progress: its header, and its pages, produced as they are read."""

    header: dict[str, Any]
    pages: Iterator[list[dict[str, Any]]]
    counts: Counter[str] = field(default_factory=Counter)
    withheld: Counter[str] = field(default_factory=Counter)

    def records(self) -> Iterator[dict[str, Any]]:
        for page in self.pages:
            yield from page

    def chunks(self) -> Iterator[bytes]:
        """The file, a page per chunk: what the REST route streams and the CLI writes."""
        yield encode(self.header)
        for page in self.pages:
            if page:
                yield b"".join(encode(record) for record in page)

    def summary(self) -> ExportSummary:
        return ExportSummary(
            format="jsonl",
            lessons=self.counts["lesson"],
            tombstones=self.counts["tombstone"],
            scope_policies=self.counts["scope_policy"],
            projects=self.counts["project"],
            unknown=self.counts["unknown"],
            withheld=dict(sorted(self.withheld.items())),
        )
