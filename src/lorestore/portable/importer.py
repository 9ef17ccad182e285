"""Runs an import: reads the header, validates every record before any transaction opens,
hands valid ones to the store in batches, retries a batch the store refused one record at a
time (so one bad record never sinks its neighbours), and tallies outcomes and problems."""

from __future__ import annotations

import gc
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from lorestore.core.errors import LorestoreError
from lorestore.portable.jsonl import HeaderError, Incoming, check_header, is_header
from lorestore.portable.lorekit import mapped_scope
from lorestore.portable.models import (
    LISTED,
    Format,
    ImportResult,
    Outcome,
    Outcomes,
    Problem,
)
from lorestore.portable.records import (
    KNOWN_TYPES,
    ParsedForeign,
    ParsedLesson,
    RecordError,
    parse_foreign,
    parse_lesson,
    parse_policy,
    parse_project,
    parse_tombstone,
)
from lorestore.storage.protocol import PolicyRecord, ProjectRepo, Tombstone

BATCH = 2000  # records per transaction: fewer commits and full-text index merges
Kind = Literal["lesson", "tombstone", "scope_policy", "project", "unknown"]


class _HeapFreeze:
    """While imports run, the cyclic garbage collector leaves alone the objects that were
    there before the first began (``gc.freeze``): a batch's records live long enough to reach
    the oldest generation, and each full collection they set off walked the whole heap again,
    a twentieth of an import's time. Objects made during the import are collected as ever.
    The last import to end hands the rest back (``gc.unfreeze``). A process that froze its
    heap itself (a forking server) is left as it is."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._ours = False

    @contextmanager
    def frozen(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                self._ours = gc.get_freeze_count() == 0
                if self._ours:
                    gc.freeze()
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0 and self._ours:
                    gc.unfreeze()


_HEAP = _HeapFreeze()


@dataclass(frozen=True, slots=True)
class Item:
    """A validated record, ready for the store, and where it came from."""

    incoming: Incoming
    kind: Kind
    value: ParsedLesson | Tombstone | PolicyRecord | ProjectRepo | ParsedForeign


@dataclass(frozen=True, slots=True)
class Applied:
    """What became of one record; a problem code and message when it did not simply land."""

    outcome: Outcome
    code: str | None = None
    message: str | None = None


class Applier(Protocol):
    """Applies a batch in one store transaction; raises LorestoreError when the store refused
    the batch as a whole (then each record is tried on its own). ``meanwhile``, if given, is
    called once while the transaction commits (see ``Store.transaction``); it never raises."""

    def __call__(
        self, items: Sequence[Item], meanwhile: Callable[[], None] | None = None
    ) -> list[Applied]: ...


class _ReadAhead:
    """The next batch, read while the store commits the one before (or, when nothing was
    committed, when asked for). What reading raises is raised by ``batch()``, once the
    batch before has been counted."""

    def __init__(self, run: ImportRun, records: Iterator[Incoming]) -> None:
        self._run = run
        self._records = records
        self._read: _Read | None = None
        self._failed: BaseException | None = None

    def __call__(self) -> None:
        try:
            self._read = self._run._read_batch(self._records)
        except BaseException as exc:
            self._failed = exc

    def batch(self) -> _Read:
        if self._read is None and self._failed is None:
            self()
        if self._failed is not None:
            raise self._failed
        assert self._read is not None
        return self._read


@dataclass(slots=True)
class _Read:
    """A batch as read: its records, the lines that were not records (with why), and
    whether the input ended with it."""

    items: list[Item] = field(default_factory=list)
    unreadable: list[tuple[Incoming, str]] = field(default_factory=list)
    done: bool = False


class ImportRun:
    """One import: feed it records as they are read; it returns the result at the end."""

    def __init__(
        self,
        format: Format,
        dry_run: bool,
        apply: Applier,
        on_problem: Callable[[Problem], None] | None = None,
    ) -> None:
        self.format = format
        self.dry_run = dry_run
        self._apply = apply
        self._on_problem = on_problem
        self._read = 0
        self._invalid = 0
        self._seen_record = False
        self._outcomes: dict[Kind, Counter[str]] = {
            k: Counter() for k in ("lesson", "tombstone", "scope_policy", "project", "unknown")
        }
        self._unknown_types: Counter[str] = Counter()
        self._problems: list[Problem] = []
        self._problems_total = 0
        self._stopped = False

    def run(self, incoming: Iterable[Incoming]) -> ImportResult:
        with _HEAP.frozen():
            return self._run(incoming)

    def _run(self, incoming: Iterable[Incoming]) -> ImportResult:
        """A batch is read, then applied; while the store commits it, the next batch is read
        (``meanwhile``: the commit runs without the interpreter, so the two overlap)."""
        records = iter(incoming)
        batch = self._read_batch(records)
        while True:
            ahead = _ReadAhead(self, records)
            self._apply_read(batch, None if batch.done else ahead)
            if self._stopped or batch.done:
                return self.result()
            batch = ahead.batch()

    def _read_batch(self, records: Iterator[Incoming]) -> _Read:
        """The next BATCH valid records, and the lines between them that were not."""
        batch = _Read()
        for record in records:
            taken = self._take(record)
            if isinstance(taken, Item):
                batch.items.append(taken)
                if len(batch.items) >= BATCH:
                    return batch
            elif taken is not None:
                batch.unreadable.append(taken)
        batch.done = True
        return batch

    def _apply_read(self, batch: _Read, meanwhile: Callable[[], None] | None) -> None:
        # Lines that were not records are reported first, as when they were read: before
        # what became of the records after them.
        for incoming, message in batch.unreadable:
            self._invalid_record(incoming, message)
        self._flush(batch.items, meanwhile)

    def _take(self, incoming: Incoming) -> Item | tuple[Incoming, str] | None:
        """A record as an Item; a line that is not one, with why; None for the header."""
        self._read += 1
        first = not self._seen_record
        self._seen_record = True
        if incoming.error is not None or incoming.record is None:
            return incoming, incoming.error or "empty"
        record = incoming.record
        if is_header(record):
            if not first:
                return incoming, "a header line after the first record"
            try:
                check_header(record)
            except HeaderError as exc:
                raise LorestoreError(
                    "invalid_argument",
                    f"cannot import this file: {exc}",
                    hint="import files written by `lorestore export` (docs/format.md)",
                ) from None
            return None
        try:
            return self._parse(incoming, record)
        except (RecordError, LorestoreError) as exc:
            return incoming, _message(exc)

    def _parse(self, incoming: Incoming, record: dict[str, Any]) -> Item:
        kind = record.get("type")
        if not isinstance(kind, str) or not kind:
            raise RecordError("a record needs a type (lesson, tombstone, scope_policy, ...)")
        if kind == "lesson":
            lesson = parse_lesson(record, derive_id=self.format == "lorekit")
            return Item(incoming, "lesson", lesson)
        if kind == "tombstone":
            return Item(incoming, "tombstone", parse_tombstone(record))
        if kind == "scope_policy":
            return Item(incoming, "scope_policy", parse_policy(record))
        if kind == "project":
            return Item(incoming, "project", parse_project(record))
        assert kind not in KNOWN_TYPES
        return Item(incoming, "unknown", parse_foreign(record))

    def _flush(self, batch: list[Item], meanwhile: Callable[[], None] | None = None) -> None:
        if not batch:
            return
        try:
            results = self._apply(batch, meanwhile)
        except LorestoreError as exc:
            if exc.code == "storage_error":  # a full or failing disk: every record would fail
                self._stop(batch, exc)
                return
            if len(batch) == 1:
                results = [Applied("refused", exc.code, exc.message)]
            else:
                for item in batch:
                    self._flush([item])
                return
        for item, applied in zip(batch, results, strict=True):
            self._tally(item, applied)

    def _stop(self, batch: list[Item], exc: LorestoreError) -> None:
        """The store failed under a batch: it is rolled back, nothing after it is read, and
        the result says where the import stopped (what landed before it stays)."""
        self._stopped = True
        for item in batch:
            self._outcomes[item.kind]["refused"] += 1
        first = batch[0].incoming
        self._problem(
            Problem(
                line=first.line,
                path=first.path,
                code=exc.code,
                message=f"the import stopped here: {exc.message}. The {len(batch)} records "
                "from this line on were not imported, nor anything after them; what came "
                "before landed",
            )
        )

    def _tally(self, item: Item, applied: Applied) -> None:
        self._outcomes[item.kind][applied.outcome] += 1
        if item.kind == "unknown" and applied.outcome in ("added", "unchanged"):
            assert isinstance(item.value, ParsedForeign)
            self._unknown_types[item.value.type] += 1
            self._problem(
                _problem_of(
                    item,
                    "unknown_type",
                    f"type {item.value.type!r} is not one this "
                    "lorestore knows: kept as it is, and written back out by export",
                )
            )
        if applied.code is not None:
            self._problem(_problem_of(item, applied.code, applied.message or applied.code))
        elif self.format == "lorekit" and isinstance(item.value, ParsedLesson):
            lesson = item.value.lesson
            written = mapped_scope({"scope": lesson.scope, "lorekit": lesson.ext.get("lorekit")})
            if written is not None:  # how each scope was mapped is said, lesson by lesson
                message = f"the file's scope {written!r} was imported as {lesson.scope!r}"
                self._problem(_problem_of(item, "scope_mapped", message))

    def _invalid_record(self, incoming: Incoming, message: str) -> None:
        self._invalid += 1
        raw = incoming.record or {}
        self._problem(
            Problem(
                line=incoming.line,
                path=incoming.path,
                type=_str(raw.get("type")),
                id=_str(raw.get("id")),
                scope=_str(raw.get("scope")),
                key=_str(raw.get("key")),
                code="invalid_record",
                message=message,
            )
        )

    def _problem(self, problem: Problem) -> None:
        self._problems_total += 1
        if len(self._problems) < LISTED:
            self._problems.append(problem)
        if self._on_problem is not None:
            self._on_problem(problem)

    def result(self) -> ImportResult:
        def outcomes(kind: Kind) -> Outcomes:
            return Outcomes.model_validate(dict(self._outcomes[kind]))

        return ImportResult(
            format=self.format,
            dry_run=self.dry_run,
            read=self._read,
            invalid=self._invalid,
            lessons=outcomes("lesson"),
            tombstones=outcomes("tombstone"),
            scope_policies=outcomes("scope_policy"),
            projects=outcomes("project"),
            unknown=outcomes("unknown"),
            unknown_types=dict(sorted(self._unknown_types.items())),
            problems=sorted(self._problems, key=lambda p: (p.line or 0, p.path or "")),
            problems_total=self._problems_total,
        )


def _message(exc: Exception) -> str:
    if isinstance(exc, LorestoreError):
        return f"{exc.code}: {exc.message}" + (f" ({exc.hint})" if exc.hint else "")
    return str(exc)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _problem_of(item: Item, code: str, message: str) -> Problem:
    value = item.value
    where: dict[str, Any] = {"line": item.incoming.line, "path": item.incoming.path}
    if isinstance(value, ParsedLesson):
        lesson = value.lesson
        ident = None if value.derive_id else lesson.id
        where |= {"type": "lesson", "id": ident, "scope": lesson.scope, "key": lesson.key}
    elif isinstance(value, Tombstone):
        where |= {"type": "tombstone", "id": value.id, "scope": value.scope}
    elif isinstance(value, PolicyRecord):
        where |= {"type": "scope_policy", "scope": value.policy.scope}
    elif isinstance(value, ProjectRepo):
        where |= {"type": "project", "scope": f"project::{value.project}"}
    else:
        where |= {"type": value.type, "scope": value.scope}
    return Problem(code=code, message=message, **where)
