"""Copying a store from one backend to another (``lorestore migrate``): every table in
dependency order, rows keyed by their stable ids, adding only what the target lacks, inside
one target transaction that a dry run rolls back.

A whole-store copy carries every identity of the source as it is, so it goes only into an
empty target (no principals but a fresh store's); into a target with principals, one
principal's tenant moves at a time, as that principal (``reconciliation.Tenant``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from lorestore.core.errors import LorestoreError
from lorestore.core.owner import Owner
from lorestore.core.timestamps import format_ts
from lorestore.storage.protocol import Transaction
from lorestore.storage.reconciliation import (
    CHILD_TABLES,
    DIFFERS,
    TABLES,
    Outcome,
    Reconciler,
    Refusal,
    Row,
    Snapshot,
    Table,
    Tenant,
)

BATCH = 500
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class Endpoint:
    """One side of a migration: a backend connection holding one transaction, speaking rows
    in the canonical form (times as canonical text, ids as text, JSON as canonical text).

    A backend's subclass (``sqlite/transfer.py``, ``postgres/transfer.py``) gives its queries
    (``transfer.sql``), how one of its rows becomes canonical, how a batch is inserted, how
    refusals read, and how the transaction ends."""

    Q: ClassVar[Mapping[str, str]]

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    # The backend's part.

    @staticmethod
    def _canonical(row: Any) -> Row:
        raise NotImplementedError

    def _insert_rows(self, query: str, rows: Sequence[Row]) -> None:
        """Insert one batch of rows by a table's ``insert_*`` query."""
        raise NotImplementedError

    def _transaction(self) -> Transaction:
        """The store's own primitives over this endpoint's open transaction (audit events
        and caps are written through them, as every write path writes them)."""
        raise NotImplementedError

    def _refusals(self, table: str) -> AbstractContextManager[None]:
        """Database refusals while reading or writing ``table``, as lorestore errors."""
        raise NotImplementedError

    def _stream(self, table: str) -> Iterator[Any]:
        """The rows of a table's ``select_*`` query as they come."""
        return iter(self._conn.execute(self.Q[f"select_{table}"]))

    def lock_audit_chains(self, owners: Iterable[str]) -> None:
        """Keep writers from extending these owners' chains until the transaction ends."""
        raise NotImplementedError

    def finish(self, *, commit: bool) -> None:
        raise NotImplementedError

    # The same on both.

    def counts(self) -> dict[str, int]:
        """Rows per copied table."""
        with self._refusals("every table"):
            row = self._conn.execute(self.Q["source_counts"]).fetchone()
        return {name: int(row[name]) for name in row.keys()}  # noqa: SIM118 - a sqlite3.Row

    def audit_owners(self) -> list[str]:
        """Owners that have an audit chain."""
        return [str(r["owner"]) for r in self._conn.execute(self.Q["audit_owners"])]

    def rows(self, table: str) -> Iterator[Row]:
        """A table's rows in the canonical columns of its ``select_*`` query, in order."""
        with self._refusals(table):
            for row in self._stream(table):
                yield self._canonical(row)

    def insert(self, table: Table, rows: Sequence[Row]) -> None:
        with self._refusals(table.name):
            if not table.by_primitive:
                self._insert_rows(self.Q[f"insert_{table.name}"], rows)
            elif table.name == "audit_log":
                # The one append primitive: events keep the hashes they carry.
                self._transaction().append_audits([_event(r) for r in rows])
            else:
                tx = self._transaction()
                for row in rows:  # the caps only: the counts are the target's triggers'
                    tx.set_max_active(row["owner"], row["max_active"])
                    tx.set_max_bytes(row["owner"], row["max_bytes"])

    def lesson_pks(self) -> dict[str, int]:
        """This store's internal key of each lesson, by stable id."""
        return {str(r["id"]): int(r["pk"]) for r in self._conn.execute(self.Q["lesson_pks"])}

    def close(self) -> None:
        self._conn.close()


def _event(row: Row) -> dict[str, Any]:
    """An audit row in the canonical form as the append primitive takes it (detail parsed)."""
    detail = row.get("detail")
    return {**row, "detail": json.loads(detail) if isinstance(detail, str) else detail or {}}


class Progress(Protocol):
    """What a caller may show while rows move (the CLI draws a Rich progress bar)."""

    def start(self, table: str, total: int) -> None: ...

    def advance(self, rows: int) -> None: ...


class _Quiet:
    def start(self, table: str, total: int) -> None:
        pass

    def advance(self, rows: int) -> None:
        pass


@dataclass(slots=True)
class TableCount:
    """Per table: rows in the source, and what became of them."""

    table: str
    source: int
    copied: int = 0
    present: int = 0
    differs: int = 0
    refused: int = 0
    skipped: int = 0  # another principal's, when one principal's tenant moves

    def add(self, outcome: Outcome) -> None:
        setattr(self, outcome, getattr(self, outcome) + 1)


@dataclass(frozen=True, slots=True)
class TransferReport:
    source: str
    target: str
    dry_run: bool
    tables: tuple[TableCount, ...]
    left_out: tuple[Refusal, ...]  # refused rows, and rows the target holds differently
    seconds: float
    tenant: Tenant | None = None  # None: the whole store, into an empty target
    chains: tuple[dict[str, Any], ...] = ()
    trust_lowered: tuple[str, ...] = ()

    @property
    def copied(self) -> int:
        return sum(t.copied for t in self.tables)

    @property
    def complete(self) -> bool:
        """Whether everything in the move landed or was there already: nothing refused and
        nothing the target holds differently (the exit status is 1 otherwise)."""
        return not self.left_out

    @property
    def mode(self) -> str:
        """What was moved, in a sentence for the report."""
        if self.tenant is None:
            return (
                "whole store: the target held no principals, so every identity of the source "
                "(users, orgs, memberships, tokens, trust and reviews) was copied as it is"
            )
        grant = (
            "verifies there, so trust and reviews came as they are"
            if self.tenant.reviewer
            else "may not verify there, so verified lessons came in their non-verified state "
            "and without reviews"
        )
        return (
            f"one tenant: the rows {self.tenant.principal} owns, moved as {self.tenant.principal}"
            f" (who {grant}); tokens, memberships, invites, bindings, caps and other "
            "principals' rows were skipped"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "dry_run": self.dry_run,
            "as": None if self.tenant is None else self.tenant.principal,
            "reviewer": None if self.tenant is None else self.tenant.reviewer,
            "mode": self.mode,
            "complete": self.complete,
            "tables": {
                t.table: {k: v for k, v in asdict(t).items() if k != "table"} for t in self.tables
            },
            "refused": [asdict(r) for r in self.left_out if r.reason != DIFFERS],
            "differs": [asdict(r) for r in self.left_out if r.reason == DIFFERS],
            "chains": list(self.chains),
            "trust_lowered": list(self.trust_lowered),
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True, slots=True)
class Location:
    """A store named by URL: its backend, a printable form without secrets, and what makes
    two URLs the same store."""

    url: str
    kind: Literal["sqlite", "postgres"]
    label: str
    identity: tuple[str, ...]

    @property
    def path(self) -> Path:
        return Path(self.url.removeprefix("sqlite:///")).expanduser()


def locate(url: str) -> Location:
    if url.startswith("sqlite:///") and len(url) > len("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///")).expanduser()
        return Location(url, "sqlite", f"sqlite:///{path}", ("sqlite", str(path.resolve())))
    if url.startswith(POSTGRES_SCHEMES):
        from lorestore.storage.postgres.transfer import describe

        label, identity = describe(url)
        return Location(url, "postgres", label, identity)
    raise LorestoreError(
        "invalid_argument",
        f"{url!r} is not a store URL",
        hint="use sqlite:///PATH or postgresql://ROLE@HOST:PORT/DATABASE",
    )


def _open(location: Location, *, target: bool, dry_run: bool) -> Endpoint:
    if location.kind == "sqlite":
        from lorestore.storage.sqlite import transfer as sqlite_side

        if target:
            return sqlite_side.open_target(location.path, dry_run=dry_run)
        return sqlite_side.open_source(location.path)
    from lorestore.storage.postgres import transfer as postgres_side

    return postgres_side.connect(location.url, write=target)


def tenant_principal(name: str) -> str:
    """The principal ``--as`` names: a user, by name or as ``user:NAME``."""
    text = name if name.startswith("user:") else f"user:{name}"
    try:
        owner = Owner.parse(text)
    except LorestoreError as exc:
        raise LorestoreError(
            "invalid_argument",
            f"--as {name!r} does not name a user ({exc.message})",
            hint="name the user whose tenant moves, e.g. --as alice",
        ) from exc
    if owner.kind != "user":
        raise LorestoreError(
            "invalid_argument",
            f"--as {name!r} names an org: a tenant moves as the person it belongs to",
            hint="name a user, e.g. --as alice",
        )
    return text


def migrate_store(
    source_url: str,
    target_url: str,
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
    as_user: str | None = None,
    corroborate_at: int = 3,
    now: datetime | None = None,
) -> TransferReport:
    """Copy what the target lacks from the source; refuse (and list) what must not land. A
    dry run does the same work and rolls it back.

    Without ``as_user`` the whole store is copied, only into an empty target; with it, the
    rows that user owns alone, as that user (see ``reconciliation.Tenant``)."""
    started = time.monotonic()
    principal = None if as_user is None else tenant_principal(as_user)
    source_at, target_at = locate(source_url), locate(target_url)
    if source_at.identity == target_at.identity:
        raise LorestoreError(
            "invalid_argument",
            f"the source and the target are the same store ({source_at.label})",
            hint="migrate copies from one store into another; name a different target",
        )
    at = format_ts(now or datetime.now(UTC))
    source = _open(source_at, target=False, dry_run=dry_run)
    try:
        if principal is not None:
            _require_principal(source, principal, source_at.label)
        target = _open(target_at, target=True, dry_run=dry_run)
        try:
            run = _Run(source, target, source_at.label, target_url, at)
            tables, reconciler = run.copy(principal, corroborate_at, progress or _Quiet())
            target.finish(commit=not dry_run)
        except BaseException:
            target.finish(commit=False)
            raise
        finally:
            target.close()
    finally:
        source.finish(commit=False)
        source.close()
    return TransferReport(
        source=source_at.label,
        target=target_at.label,
        dry_run=dry_run,
        tables=tuple(tables),
        left_out=tuple(reconciler.left_out),
        seconds=time.monotonic() - started,
        tenant=reconciler.tenant,
        chains=tuple(reconciler.chain_reports()),
        trust_lowered=tuple(reconciler.lowered),
    )


def _require_principal(source: Endpoint, principal: str, label: str) -> None:
    users = [r["id"] for r in source.rows("principals") if r["kind"] == "user"]
    if principal not in users:
        raise LorestoreError(
            "invalid_argument",
            f"{label} has no principal {principal}",
            hint=f"name one of its users: {', '.join(users) or '(none)'}",
            details={"users": users},
        )


@dataclass(slots=True)
class _Run:
    source: Endpoint
    target: Endpoint
    source_label: str
    target_url: str
    now: str

    def copy(
        self, principal: str | None, corroborate_at: int, progress: Progress
    ) -> tuple[list[TableCount], Reconciler]:
        source, target = self.source, self.target
        totals = source.counts()
        # Lock before reading the target's chain heads: what we read must still be the heads
        # when our events land after them.
        owners = source.audit_owners() if principal is None else [principal]
        target.lock_audit_chains(owners)
        snapshot = Snapshot.read(target.rows)
        tenant = None
        if principal is None:
            _require_empty(snapshot, self.source_label, self.target_url)
        else:
            reviewer = snapshot.may_review(principal, self.now)
            tenant = Tenant(principal, reviewer, corroborate_at)
        reconciler = Reconciler(snapshot, source=self.source_label, now=self.now, tenant=tenant)
        # The chains are walked before any event lands (the rows are kept for the copy).
        events = list(source.rows("audit_log"))
        reconciler.plan_chains(iter(events))
        counts = [
            _copy_table(
                table,
                events if table.name == "audit_log" else source.rows(table.name),
                target,
                reconciler,
                totals[table.name],
                progress,
            )
            for table in TABLES
        ]
        return counts, reconciler


def _require_empty(snapshot: Snapshot, source: str, target_url: str) -> None:
    """A whole-store copy carries every identity of the source (memberships, tokens, trust):
    into a target that has principals of its own, that would hand them to whoever wrote the
    source."""
    occupants = snapshot.occupants
    if not occupants:
        return
    shown = ", ".join(occupants[:5]) + (
        f" and {len(occupants) - 5} more" if len(occupants) > 5 else ""
    )
    raise LorestoreError(
        "conflict",
        f"the target already has principals ({shown}): a whole-store copy would carry every "
        "identity, membership, token and trust of the source into it, and the source is a "
        "store its person controls completely",
        hint=f"move one person's lessons at a time, as that person: lorestore migrate --from "
        f"{source} --to {_redacted(target_url)} --as USER; a whole-store copy needs an empty "
        "target (a new database after `lorestore db init`, or a new SQLite file)",
        details={"principals": occupants},
    )


def _redacted(url: str) -> str:
    return locate(url).label


def _copy_table(
    table: Table,
    rows: Iterable[Row],
    target: Endpoint,
    reconciler: Reconciler,
    total: int,
    progress: Progress,
) -> TableCount:
    count = TableCount(table.name, total)
    progress.start(table.name, total)
    pks = target.lesson_pks() if table.name in CHILD_TABLES else None
    batch: list[Row] = []
    seen = 0
    for row in rows:
        outcome, landing = reconciler.decide(table, row)
        count.add(outcome)
        if outcome == "copied":
            batch.extend(reconciler.before(table, landing))
            batch.append(
                landing if pks is None else {**landing, "lesson_pk": pks[landing["lesson_id"]]}
            )
        seen += 1
        if seen % BATCH == 0:
            _flush(target, table, batch)
            progress.advance(BATCH)
    batch.extend(reconciler.after(table))
    _flush(target, table, batch)
    progress.advance(seen % BATCH)
    return count


def _flush(target: Endpoint, table: Table, batch: list[Row]) -> None:
    if batch:
        target.insert(table, batch)
        batch.clear()
