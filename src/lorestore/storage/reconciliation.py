"""What ``lorestore migrate`` does with each source row, given what the target held before the
run: copy it, count it as already present (or present but different, kept as it is), or
refuse it with a reason. The target is only ever added to, never overwritten.

The rules it applies are core's, as every write path's are: a value the target rejected
(``core.tombstones``), a scope the target routes elsewhere (``core.patterns``); this module
gathers the snapshot they are applied to."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from lorestore.core.errors import LorestoreError
from lorestore.core.jsontext import dumps
from lorestore.core.normalise import value_digests
from lorestore.core.patterns import most_specific
from lorestore.core.scope import Scope, parse_scope
from lorestore.core.tombstones import refusing_tombstone, rejected_value
from lorestore.storage.protocol import Tombstone

Row = dict[str, Any]
Outcome = Literal["copied", "present", "differs", "refused"]
DIFFERS = "target_differs"  # the reason of a row kept as the target holds it


@dataclass(frozen=True, slots=True)
class Table:
    """A copied table: the columns that identify a row in any store, and the columns a
    store sets for itself (not compared)."""

    name: str
    key: tuple[str, ...]
    local: tuple[str, ...] = ()

    def key_of(self, row: Row) -> tuple[Any, ...]:
        return tuple(row[c] for c in self.key)

    def digest(self, row: Row) -> str:
        content = {k: v for k, v in row.items() if k not in self.local}
        return hashlib.blake2b(dumps(content).encode("utf-8"), digest_size=16).hexdigest()


# Dependency order: principals before what references them; tombstones before lessons;
# lessons before their versions and sessions. Audit ids and lesson pks are the store's own.
TABLES = (
    Table("principals", ("id",), local=("created_at",)),
    Table("memberships", ("org", "member")),
    Table("invites", ("id",)),
    Table("scope_bindings", ("org", "pattern")),
    Table("tokens", ("id",)),
    # An owner's caps before any row the counting triggers add to (a scope policy's ext
    # counts as stored bytes): its owner_stats row is then the copied one, not the trigger's.
    Table("owner_stats", ("owner",)),
    Table("scope_policies", ("owner", "scope")),
    Table("tombstones", ("id",)),
    Table("lessons", ("id",)),
    Table("lesson_versions", ("lesson_id", "version")),
    Table("lesson_sessions", ("lesson_id", "value_digest", "session")),
    Table("audit_log", ("owner", "hash"), local=("id",)),
    Table("recall_log", ("recall_id",)),
    Table("foreign_records", ("owner", "digest")),
)
CHILD_TABLES = frozenset({"lesson_versions", "lesson_sessions"})


_TOMBSTONE_COLUMNS = (
    "id",
    "owner",
    "scope",
    "value_digest",
    "reason",
    "actor",
    "created_at",
    "lesson_id",
)


class RejectedRow(NamedTuple):
    """What a refusal names of the target's lesson whose rejection refuses a row."""

    scope: str
    key: str
    trust: str
    value: str


@dataclass(frozen=True, slots=True)
class Refusal:
    """A row (or, for an audit chain, an owner) left out, and why."""

    table: str
    key: str
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Snapshot:
    """The target as it was before this run, reduced to what the decisions need."""

    digests: dict[str, dict[tuple[Any, ...], str]] = field(default_factory=dict)
    addresses: dict[tuple[str, str, str], str] = field(default_factory=dict)
    tombstones: dict[tuple[str, str], list[Tombstone]] = field(
        default_factory=lambda: defaultdict(list)
    )
    # The lessons live tombstones name (owner, id), for the command a refusal says lifts it.
    rejecting: dict[tuple[str, str], RejectedRow | None] = field(default_factory=dict)
    patterns: dict[str, str] = field(default_factory=dict)
    chains: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    @classmethod
    def read(cls, rows: Callable[[str], Iterator[Row]]) -> Snapshot:
        snapshot = cls()
        for table in TABLES:
            digests = snapshot.digests.setdefault(table.name, {})
            for row in rows(table.name):
                if table.name == "audit_log":
                    snapshot.chains[row["owner"]].append(row["hash"])
                    continue
                digests[table.key_of(row)] = table.digest(row)
                snapshot.note(table.name, row)
        return snapshot

    def note(self, table: str, row: Row) -> None:
        if table == "lessons":
            self.addresses[(row["owner"], row["scope"], row["key"])] = row["id"]
            if (row["owner"], row["id"]) in self.rejecting:  # tombstones are read first
                self.rejecting[(row["owner"], row["id"])] = RejectedRow(
                    row["scope"], row["key"], row["trust"], row["value"]
                )
        elif table == "tombstones" and row["lifted_at"] is None:
            tomb = Tombstone(**{name: row[name] for name in _TOMBSTONE_COLUMNS})
            self.tombstones[(tomb.owner, tomb.value_digest)].append(tomb)
            if tomb.lesson_id is not None:
                self.rejecting.setdefault((tomb.owner, tomb.lesson_id), None)
        elif table == "scope_bindings":
            self.patterns[row["pattern"]] = row["org"]


class Reconciler:
    """Decides row by row, in the order the tables are copied, and keeps the refusals."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.left_out: list[Refusal] = []
        self._landed: set[str] = set()  # lessons whose target row is the source's
        self._chain_at: dict[str, int] = defaultdict(int)
        self._diverged: set[str] = set()
        self._source_patterns: dict[str, str] = {}  # the source's bindings: pattern -> org

    def decide(self, table: Table, row: Row) -> Outcome:
        if table.name == "audit_log":
            return self._audit(row)
        if table.name == "scope_bindings":
            self._source_patterns[row["pattern"]] = row["org"]
        key = table.key_of(row)
        held = self.snapshot.digests[table.name].get(key)
        if held is not None:
            if held != table.digest(row):
                self._refuse(
                    table.name,
                    key,
                    DIFFERS,
                    "the target holds this row in another state; kept the target's",
                )
                return "differs"
            if table.name == "lessons":
                self._landed.add(row["id"])
            return "present"
        if table.name in CHILD_TABLES:
            # A version or session of a lesson that did not land has nothing to attach to;
            # the lesson's own refusal says why.
            return "copied" if row["lesson_id"] in self._landed else "refused"
        refusal = self._guard(table.name, row)
        if refusal is not None:
            self.left_out.append(refusal)
            return "refused"
        if table.name == "lessons":
            self._landed.add(row["id"])
        return "copied"

    def _guard(self, table: str, row: Row) -> Refusal | None:
        if table == "lessons":
            return self._tombstoned(row) or self._address_taken(row) or self._bound(row)
        if table == "scope_bindings":
            org = self.snapshot.patterns.get(row["pattern"])
            if org is not None:
                return Refusal(
                    table,
                    _text((row["org"], row["pattern"])),
                    "pattern_bound",
                    f"{row['pattern']} is bound to {org} in the target",
                    {"pattern": row["pattern"], "target_org": org},
                )
        return None

    def _tombstoned(self, row: Row) -> Refusal | None:
        """A value rejected in the target at the lesson's scope or a broader one stays out,
        unless the lesson is itself a rejected record (it serves nothing): the rule of
        every write path (``core.tombstones``), on the target's tombstones."""
        owner = row["owner"]
        # The stored digest, and every digest the target may hold for the value.
        digests = dict.fromkeys([row["value_digest"], *value_digests(row["value"])])
        live = (t for d in digests for t in self.snapshot.tombstones.get((owner, d), ()))
        tomb = refusing_tombstone(live, row["scope"], digests, trust=row["trust"])
        if tomb is None:
            return None
        rejected = self.snapshot.rejecting.get((owner, tomb.lesson_id or ""))
        refusal = rejected_value(tomb, rejected, where=" in the target")
        return Refusal(
            "lessons",
            row["id"],
            "rejected_value",
            f"{owner} {row['scope']} / {row['key']}: {refusal.message} ({refusal.hint})",
            _where(row) | {"tombstone": tomb.id},
        )

    def _address_taken(self, row: Row) -> Refusal | None:
        other = self.snapshot.addresses.get((row["owner"], row["scope"], row["key"]))
        if other is None:
            return None
        return Refusal(
            "lessons",
            row["id"],
            "address_taken",
            f"{row['owner']} {row['scope']} / {row['key']} is held in the target by another "
            f"lesson ({other})",
            _where(row) | {"target_lesson": other},
        )

    def _bound(self, row: Row) -> Refusal | None:
        """A lesson at a scope the target already routes to another org (its most specific
        binding, as every operation resolves it) than the source does would be out of its
        owner's reach there: reads and writes of that scope go to the org. One the source
        routes the same way (set aside by a binding there too) is copied as it is."""
        try:
            scope = parse_scope(row["scope"])
        except LorestoreError:
            return None
        routed = _route(self.snapshot.patterns, scope)
        if routed is None:
            return None
        pattern, org = routed
        source = _route(self._source_patterns, scope)
        if org == row["owner"] or (source is not None and source[1] == org):
            return None
        return Refusal(
            "lessons",
            row["id"],
            "scope_bound",
            f"{row['owner']} {row['scope']} / {row['key']}: the target binds {pattern} to "
            f"{org}, so there this lesson would be out of {row['owner']}'s reach",
            _where(row) | {"pattern": pattern, "target_org": org},
        )

    def _audit(self, row: Row) -> Outcome:
        """Events arrive in source id order, which is each owner's chain order. The target's
        chain of an owner must be a prefix of the source's, or appending would fork it."""
        owner = row["owner"]
        position = self._chain_at[owner]
        self._chain_at[owner] += 1
        if owner in self._diverged:
            return "refused"
        chain = self.snapshot.chains.get(owner, [])
        if position >= len(chain):
            return "copied"
        if chain[position] == row["hash"]:
            return "present"
        self._diverged.add(owner)
        self.left_out.append(
            Refusal(
                "audit_log",
                owner,
                "audit_chain_diverged",
                f"the target's audit chain of {owner} differs from the source's at event "
                f"{position + 1}; its remaining events were not copied, so both chains still "
                "verify",
                {"owner": owner, "position": position + 1},
            )
        )
        return "refused"

    def _refuse(self, table: str, key: tuple[Any, ...], reason: str, message: str) -> None:
        self.left_out.append(Refusal(table, _text(key), reason, message))


def _route(patterns: dict[str, str], scope: Scope) -> tuple[str, str] | None:
    """The binding (pattern, org) that routes ``scope``: the most specific that covers it."""
    pattern = most_specific(patterns, scope, lambda p: p)
    return None if pattern is None else (pattern, patterns[pattern])


def _where(row: Row) -> dict[str, Any]:
    return {"owner": row["owner"], "scope": row["scope"], "key": row["key"]}


def _text(key: tuple[Any, ...]) -> str:
    return " ".join(str(part) for part in key)
