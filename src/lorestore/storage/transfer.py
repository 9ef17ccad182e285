"""Copying a whole store from one backend to another (``lorestore migrate``): every table in
dependency order, rows keyed by their stable ids, adding only what the target lacks, inside
one target transaction that a dry run rolls back."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from lorestore.core.errors import LorestoreError
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

    def _executemany(self, query: str, rows: Sequence[Row]) -> None:
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

    def insert(self, table: str, rows: Sequence[Row]) -> None:
        with self._refusals(table):
            self._executemany(self.Q[f"insert_{table}"], rows)

    def lesson_pks(self) -> dict[str, int]:
        """This store's internal key of each lesson, by stable id."""
        return {str(r["id"]): int(r["pk"]) for r in self._conn.execute(self.Q["lesson_pks"])}

    def close(self) -> None:
        self._conn.close()


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

    @property
    def copied(self) -> int:
        return sum(t.copied for t in self.tables)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "dry_run": self.dry_run,
            "tables": {
                t.table: {k: v for k, v in asdict(t).items() if k != "table"} for t in self.tables
            },
            "refused": [asdict(r) for r in self.left_out if r.reason != DIFFERS],
            "differs": [asdict(r) for r in self.left_out if r.reason == DIFFERS],
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


def migrate_store(
    source_url: str,
    target_url: str,
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> TransferReport:
    """Copy everything the target lacks from the source; refuse (and list) what must not
    land. A dry run does the same work and rolls it back."""
    started = time.monotonic()
    source_at, target_at = locate(source_url), locate(target_url)
    if source_at.identity == target_at.identity:
        raise LorestoreError(
            "invalid_argument",
            f"the source and the target are the same store ({source_at.label})",
            hint="migrate copies from one store into another; name a different target",
        )
    source = _open(source_at, target=False, dry_run=dry_run)
    try:
        target = _open(target_at, target=True, dry_run=dry_run)
        try:
            tables, left_out = _copy_all(source, target, progress or _Quiet())
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
        left_out=tuple(left_out),
        seconds=time.monotonic() - started,
    )


def _copy_all(
    source: Endpoint, target: Endpoint, progress: Progress
) -> tuple[list[TableCount], list[Refusal]]:
    totals = source.counts()
    # Lock before reading the target's chain heads: what we read must still be the heads
    # when our events land after them.
    target.lock_audit_chains(source.audit_owners())
    reconciler = Reconciler(Snapshot.read(target.rows))
    counts = [
        _copy_table(table, source, target, reconciler, totals[table.name], progress)
        for table in TABLES
    ]
    return counts, reconciler.left_out


def _copy_table(
    table: Table,
    source: Endpoint,
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
    for row in source.rows(table.name):
        outcome = reconciler.decide(table, row)
        count.add(outcome)
        if outcome == "copied":
            batch.append(row if pks is None else {**row, "lesson_pk": pks[row["lesson_id"]]})
        seen += 1
        if seen % BATCH == 0:
            _flush(target, table, batch)
            progress.advance(BATCH)
    _flush(target, table, batch)
    progress.advance(seen % BATCH)
    return count


def _flush(target: Endpoint, table: Table, batch: list[Row]) -> None:
    if batch:
        target.insert(table.name, batch)
        batch.clear()
