"""What ``lorestore migrate`` does with each source row, given what the target held before the
run: copy it, count it as already present (or present but different, kept as it is), refuse
it with a reason, or (moving one principal's tenant) skip it as another principal's. The target
is only ever added to, never overwritten; a cap the target left at its default is raised to
the source's.

Moving one principal's tenant (``migrate --as``) treats the source as untrusted: it is a file
its person controls completely. Only that principal's rows are considered, never tokens,
memberships, invites, bindings, caps or any other principal's rows, and trust and review are
reduced to what the principal may grant in the target (``Tenant``).

The rules it applies are core's, as every write path's are: a value the target rejected
(``core.tombstones``), a scope the target routes elsewhere (``core.patterns``); this module
gathers the snapshot they are applied to."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from lorestore.core.audit import CARRIED_CHAIN, GENESIS, AuditEntry, ChainWalk
from lorestore.core.errors import LorestoreError
from lorestore.core.jsontext import dumps
from lorestore.core.normalise import value_digests
from lorestore.core.patterns import most_specific
from lorestore.core.scope import Scope, parse_scope
from lorestore.core.tombstones import refusing_tombstone, rejected_value
from lorestore.storage.protocol import Tombstone

Row = dict[str, Any]
Outcome = Literal["copied", "present", "differs", "refused", "skipped"]
DIFFERS = "target_differs"  # the reason of a row kept as the target holds it
# Principals every fresh store has: a target holding no others is empty.
FRESH_PRINCIPALS = frozenset({"user:local"})
MIGRATE_ACTOR = "lorestore-migrate"  # the actor of the audit events migrate appends itself
TRUST_LOWERED = "migrate.trust_lowered"
# What one principal's tenant never carries: identities and grants, and the cap (the
# target operator's call).
_NEVER_CARRIED = frozenset({"memberships", "invites", "scope_bindings", "tokens", "owner_stats"})


@dataclass(frozen=True, slots=True)
class Table:
    """A copied table: the columns that identify a row in any store, and the columns a
    store sets for itself (not compared)."""

    name: str
    key: tuple[str, ...]
    local: tuple[str, ...] = ()
    # Written through the store's own primitive (the audit append, the cap), not an
    # ``insert_*`` query of transfer.sql.
    by_primitive: bool = False

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
    # counts as stored bytes), through the store's primitive (an upsert of the caps only).
    Table("owner_stats", ("owner",), by_primitive=True),
    Table("scope_policies", ("owner", "scope")),
    Table("project_repos", ("owner", "project", "repo")),
    Table("tombstones", ("id",)),
    Table("lessons", ("id",)),
    Table("lesson_versions", ("lesson_id", "version")),
    Table("lesson_sessions", ("lesson_id", "value_digest", "session")),
    Table("audit_log", ("owner", "hash"), local=("id",), by_primitive=True),
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
class Tenant:
    """One principal's tenant moved as that principal (``migrate --as``): ``reviewer`` says
    whether the principal may verify in the target (it holds a live review or admin token
    there without scope or org limits); a non-reviewer's verified lessons land in their
    non-verified state (``corroborated`` from ``corroborate_at`` sessions) and lose their
    review."""

    principal: str
    reviewer: bool
    corroborate_at: int


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
    principals: list[str] = field(default_factory=list)
    # owner -> its own caps (max_active, max_bytes); None: it follows the store's default.
    caps: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)
    tokens: list[Row] = field(default_factory=list)

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
        elif table == "principals":
            self.principals.append(row["id"])
        elif table == "owner_stats":
            self.caps[row["owner"]] = (row["max_active"], row["max_bytes"])
        elif table == "tokens":
            self.tokens.append(row)

    @property
    def occupants(self) -> list[str]:
        """The principals a fresh store would not have: a target with any is not empty."""
        return [p for p in self.principals if p not in FRESH_PRINCIPALS]

    def may_review(self, principal: str, now: str) -> bool:
        """Whether ``principal`` holds a live token here that verifies anywhere it acts: the
        review or admin permission, no scope or org limits, not revoked, not expired."""
        return any(
            t["principal"] == principal
            and t["permission"] in ("review", "admin")
            and t["scopes"] is None
            and t["orgs"] is None
            and t["revoked_at"] is None
            and (t["expires_at"] is None or t["expires_at"] > now)
            for t in self.tokens
        )


@dataclass(slots=True)
class _Chain:
    """One owner's source chain against the target's: the leading events the target holds,
    the leading events whose hashes follow (the rest are refused), and where those between
    land (on the target's head directly, or under a migration record linking both heads)."""

    target_head: str
    target_hashes: frozenset[str]
    walk: ChainWalk = field(default_factory=ChainWalk)
    present: int = 0
    valid: int = 0
    broken: bool = False
    start: str | None = None  # prev_hash of the first event to copy
    head: str | None = None  # hash of the last event to copy

    def read(self, row: Row) -> None:
        if self.broken or not self.walk.step(row):
            self.broken = True
            return
        self.valid += 1
        if self.valid == self.present + 1 and row["hash"] in self.target_hashes:
            self.present += 1
            return
        if self.start is None:
            self.start = row["prev_hash"]
        self.head = row["hash"]

    @property
    def to_copy(self) -> int:
        return self.valid - self.present

    @property
    def linked(self) -> bool:
        return self.to_copy > 0 and self.start != self.target_head


class Reconciler:
    """Decides row by row, in the order the tables are copied, and keeps the refusals.

    ``tenant`` None copies the whole store (only into an empty target, which the caller
    checks); a ``Tenant`` moves that principal's rows alone, as that principal."""

    def __init__(
        self, snapshot: Snapshot, *, source: str, now: str, tenant: Tenant | None = None
    ) -> None:
        self.snapshot = snapshot
        self.tenant = tenant
        self.left_out: list[Refusal] = []
        self.lowered: list[str] = []  # lessons whose trust the tenant could not carry
        self._source = source
        self._now = now
        self._landed: set[str] = set()  # lessons whose target row is the source's
        self._ours: set[str] = set()  # the tenant's lessons in the source
        self._chains: dict[str, _Chain] = {}
        self._chain_at: dict[str, int] = defaultdict(int)
        self._linked: set[str] = set()  # owners whose migration record is out
        self._source_patterns: dict[str, str] = {}  # the source's bindings: pattern -> org

    # --- the audit chains, read once before anything is copied ---------------------------

    def plan_chains(self, rows: Iterator[Row]) -> None:
        """Walk each source chain (in scope) against the target's, so that what lands and
        how is known before the first event of an owner is written."""
        for row in rows:
            owner = row["owner"]
            if not self._in_scope_owner(owner):
                continue
            chain = self._chains.get(owner)
            if chain is None:
                held = self.snapshot.chains.get(owner, [])
                head = held[-1] if held else GENESIS
                chain = self._chains[owner] = _Chain(head, frozenset(held))
            chain.read(row)
        for owner, chain in self._chains.items():
            if chain.broken:
                self.left_out.append(
                    Refusal(
                        "audit_log",
                        owner,
                        "audit_chain_broken",
                        f"the source's audit chain of {owner} does not verify after event "
                        f"{chain.valid}: the events from there on were not copied (run "
                        "`lorestore audit verify` on the source)",
                        {"owner": owner, "position": chain.valid + 1},
                    )
                )

    def chain_reports(self) -> list[dict[str, Any]]:
        """Per owner: source events copied and present, and whether the copied ones landed
        under a migration record."""
        return [
            {"owner": o, "copied": c.to_copy, "present": c.present, "linked": c.linked}
            for o, c in sorted(self._chains.items())
        ]

    def before(self, table: Table, row: Row) -> list[Row]:
        """What must land before ``row`` (itself to be copied): the migration record that
        heads an owner's carried chain."""
        if table.name != "audit_log":
            return []
        owner = row["owner"]
        chain = self._chains[owner]
        if not chain.linked or owner in self._linked:
            return []
        self._linked.add(owner)
        detail: dict[str, Any] = {
            "source": self._source,
            "from": chain.start,
            "head": chain.head,
            "events": chain.to_copy,
            "target_head": chain.target_head,
        }
        if self.tenant is not None:
            detail["as"] = self.tenant.principal
        entry = AuditEntry(
            owner=owner,
            at=self._now,
            actor=MIGRATE_ACTOR,
            action=CARRIED_CHAIN,
            reason="carried from another store",
            detail=detail,
        )
        return [entry.chained(chain.target_head)]

    def after(self, table: Table) -> list[Row]:
        """What lands after a table's rows: at the end of the tenant's chain, the event that
        names the lessons that lost a trust the tenant may not grant here."""
        if table.name != "audit_log" or self.tenant is None or not self.lowered:
            return []
        owner = self.tenant.principal
        chain = self._chains.get(owner)
        if chain is not None and chain.to_copy:
            prev = str(chain.head)
        else:
            held = self.snapshot.chains.get(owner, [])
            prev = held[-1] if held else GENESIS
        entry = AuditEntry(
            owner=owner,
            at=self._now,
            actor=MIGRATE_ACTOR,
            action=TRUST_LOWERED,
            reason=f"{owner} may not verify in this store",
            detail={"source": self._source, "lessons": self.lowered},
        )
        return [entry.chained(prev)]

    # --- row by row ----------------------------------------------------------------------

    def decide(self, table: Table, row: Row) -> tuple[Outcome, Row]:
        """The outcome of a source row, and the row as it would land."""
        if self.tenant is not None and not self._in_tenant(table, row):
            return "skipped", row
        if table.name == "audit_log":
            return self._audit(row), row
        if table.name == "scope_bindings":
            self._source_patterns[row["pattern"]] = row["org"]
        landing = self._as_tenant(row) if table.name == "lessons" else row
        outcome = self._decide(table, landing, row)
        if landing is not row and outcome == "copied":
            self.lowered.append(row["id"])
        return outcome, landing

    def _decide(self, table: Table, row: Row, original: Row) -> Outcome:
        """``row`` as it would land, ``original`` as the source has it: a target that holds
        either (an earlier whole-store copy held the original) has it present."""
        key = table.key_of(row)
        held = self.snapshot.digests[table.name].get(key)
        if held is not None:
            same = held == table.digest(row) or (
                original is not row and held == table.digest(original)
            )
            if not same:
                if table.name == "owner_stats" and self._raises_cap(row):
                    return "copied"
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

    def _raises_cap(self, row: Row) -> bool:
        """Caps the source set where the target's still follow its default are copied (the
        endpoint sets them); caps both stores set, and differently, stay the target's."""
        return self.snapshot.caps.get(row["owner"], (None, None)) == (None, None)

    def _in_scope_owner(self, owner: str) -> bool:
        return self.tenant is None or owner == self.tenant.principal

    def _in_tenant(self, table: Table, row: Row) -> bool:
        """Whether a source row is the tenant's to move: its principal row and the rows it
        owns; never identities or grants (tokens, memberships, invites, bindings) or caps."""
        assert self.tenant is not None
        if table.name == "principals":
            return bool(row["id"] == self.tenant.principal)
        if table.name in _NEVER_CARRIED:
            return False
        if table.name in CHILD_TABLES:
            return row["lesson_id"] in self._ours
        ours = bool(row["owner"] == self.tenant.principal)
        if ours and table.name == "lessons":
            self._ours.add(row["id"])
        return ours

    def _as_tenant(self, row: Row) -> Row:
        """A lesson as the tenant may land it: verified (and reviewed, but for a rejection)
        only where the tenant may verify."""
        if self.tenant is None or self.tenant.reviewer:
            return row
        if row["trust"] == "verified":
            corroborated = int(row["seen_count"]) >= self.tenant.corroborate_at
            trust = "corroborated" if corroborated else "candidate"
            return {**row, "trust": trust, "review": None}
        if row["review"] is not None and row["trust"] != "rejected":
            return {**row, "review": None}
        return row

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
        """Events arrive in source id order, which is each owner's chain order: those the
        target holds are present, those that follow are copied (under the owner's migration
        record when the target's chain went on without them), the rest refused."""
        owner = row["owner"]
        position = self._chain_at[owner]
        self._chain_at[owner] += 1
        chain = self._chains[owner]
        if position < chain.present:
            return "present"
        return "copied" if position < chain.valid else "refused"

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
