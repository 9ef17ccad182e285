"""Writing a LoreKit tree (``lorestore export --format lorekit``): one file per lesson, what
a file cannot hold reported and never written as a field LoreKit would misread, other files in
the tree left alone, and nothing written or read through a symbolic link that leaves it."""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from lorestore.core.errors import LorestoreError
from lorestore.core.scope import parse_scope
from lorestore.core.timestamps import parse_ts
from lorestore.core.validation import validate_key
from lorestore.portable.lorekit import (  # the file format, read and written alike
    _SOURCE,
    OUTSIDE_TREE,
    WITHHELD_TRUST,
    LoreKitError,
    _file_text,
    _object,
    field_name,
    file_text,
    inside,
    parse_file,
    relative_path,
    slug,
)
from lorestore.portable.models import LISTED, Problem
from lorestore.portable.shapes import LESSON

_SOURCE_KEPT = frozenset(_SOURCE.values())


def losses(record: dict[str, Any]) -> list[str]:
    """What a lesson record holds that a LoreKit file cannot."""
    found = []
    versions = record.get("versions") or []
    fields = _object(record, "lorekit").get("fields") or []
    checks = {
        # Earlier versions, listed or not (an export without history leaves them out).
        "history": len(versions) > 1 or (record.get("version") or 1) > 1,
        "trust": record.get("trust", "candidate") != "candidate",
        "kind": record.get("kind", "lesson") != "lesson",
        "valid_time": bool(record.get("valid_from") or record.get("valid_to")),
        "depends_on": bool(record.get("depends_on")),
        "review": bool(record.get("review")),
        "pending_revision": bool(record.get("pending_revision")),
        "provenance": bool(set(record.get("source") or {}) - _SOURCE_KEPT),
        "ext": bool(set(record) - set(LESSON.fields) - {"lorekit"})
        or any(not (isinstance(p, list) and len(p) == 2 and field_name(p[0])) for p in fields),
    }
    found = [name for name, lost in checks.items() if lost]
    return found


@dataclass
class TreeReport:
    """What a LoreKit export wrote, withheld and could not keep."""

    lessons: int = 0
    written: int = 0
    unchanged: int = 0
    withheld: Counter[str] = field(default_factory=Counter)
    not_kept: Counter[str] = field(default_factory=Counter)
    notes: list[Problem] = field(default_factory=list)

    def note(self, record: dict[str, Any], code: str, message: str) -> None:
        if len(self.notes) < LISTED:
            self.notes.append(
                Problem(
                    type=str(record.get("type")),
                    id=record.get("id"),
                    scope=record.get("scope"),
                    key=record.get("key"),
                    code=code,
                    message=message,
                )
            )


class TreeWriter:
    """Writes lesson records as files under ``root``; counts what it cannot write."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.report = TreeReport()
        self._paths: set[PurePosixPath] = set()
        self._real = root.resolve()  # nothing is written, or read, outside it

    def write_all(self, records: Iterable[dict[str, Any]]) -> TreeReport:
        for record in records:
            self.write(record)
        return self.report

    def write(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        if kind != "lesson":
            what = {
                "tombstone": "tombstones",
                "scope_policy": "scope_policies",
                "project": "projects",
            }
            self.report.not_kept[what.get(str(kind), "unknown_records")] += 1
            return
        trust = record.get("trust", "candidate")
        if trust in WITHHELD_TRUST:
            self.report.withheld[f"lorekit_{trust}"] += 1
            message = (
                f"a {trust} lesson is withheld from recall; "
                "a LoreKit file would serve it, so it was not written"
            )
            rel = relative_path(record)
            if self._holds(self.root / rel, record):
                message += f"; {rel}, written before, still holds it: delete it"
            self.report.note(record, "withheld", message)
            return
        lost = losses(record)
        for name in [*lost, "id"]:
            self.report.not_kept[name] += 1
        if lost:
            self.report.note(record, "not_kept", "LoreKit cannot hold: " + ", ".join(lost))
        self._store(record)

    def _store(self, record: dict[str, Any]) -> None:
        rel = relative_path(record)
        if not inside(self.root / rel.parent, self._real):
            self.report.withheld[OUTSIDE_TREE] += 1
            self.report.note(
                record,
                OUTSIDE_TREE,
                f"{rel.parent} is a symbolic link that leaves the tree: nothing written "
                "through it (replace the link with a directory)",
            )
            return
        text = file_text(record).encode("utf-8")
        if rel in self._paths:
            rel = self._free(rel, record)
            self.report.note(
                record,
                "slug_collision",
                f"another key has this slug; written "
                f"as {rel} (LoreKit itself would write {slug(record['key'])}.md)",
            )
        elif self._foreign(self.root / rel, record, text):
            kept, rel = rel, self._free(rel, record)
            self.report.note(
                record,
                "file_kept",
                f"{kept} holds another lesson or is not a lesson file; kept it, and wrote "
                f"this one as {rel}",
            )
        self._paths.add(rel)
        self.report.lessons += 1
        target = self.root / rel
        if target.is_file() and target.read_bytes() == text:
            self.report.unchanged += 1
            return
        newer = self._newer_on_disk(target, record)
        if newer is not None:
            self.report.unchanged += 1
            self.report.note(
                record,
                "newer_on_disk",
                f"{rel} was changed in LoreKit since (updated {newer}); kept it, not "
                "overwritten: import the tree to bring the change in",
            )
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".lorestore-")
        with os.fdopen(handle, "wb") as out:
            out.write(text)
        os.replace(temporary, target)
        self.report.written += 1

    def _free(self, rel: PurePosixPath, record: dict[str, Any]) -> PurePosixPath:
        """The next ``<slug>-N.md`` neither written by this export nor holding another
        lesson on disk."""
        n = 2
        while True:
            candidate = rel.with_name(f"{rel.stem}-{n}.md")
            if candidate not in self._paths and not self._foreign(
                self.root / candidate, record, None
            ):
                return candidate
            n += 1

    @staticmethod
    def _read(target: Path) -> dict[str, Any] | None:
        """The lesson a file on disk holds; None when it is not one (or cannot be read)."""
        try:
            return parse_file(_file_text(target), target.name)
        except (OSError, UnicodeDecodeError, LoreKitError):
            return None

    @staticmethod
    def _same_lesson(found: dict[str, Any], record: dict[str, Any]) -> bool:
        try:
            scope = parse_scope(found["scope"]).text
            return bool(scope == record["scope"] and validate_key(found["key"]) == record["key"])
        except LorestoreError:
            return False

    def _foreign(self, target: Path, record: dict[str, Any], text: bytes | None) -> bool:
        """Whether a file is already at ``target`` that an export must not replace: one that
        is not a lesson file, or holds another lesson (another address)."""
        if not inside(target, self._real):  # a link out: neither read nor replaced
            return True
        if not target.exists():
            return False
        if text is not None and target.is_file() and target.read_bytes() == text:
            return False
        found = self._read(target) if target.is_file() else None
        return found is None or not self._same_lesson(found, record)

    def _holds(self, target: Path, record: dict[str, Any]) -> bool:
        if not inside(target, self._real):
            return False
        found = self._read(target) if target.is_file() else None
        return found is not None and self._same_lesson(found, record)

    def _newer_on_disk(self, target: Path, record: dict[str, Any]) -> str | None:
        """The file's ``updated`` time when the lesson on disk was changed after the record's
        last update (an edit made in LoreKit since the last import or export)."""
        found = self._read(target) if target.is_file() else None
        if found is None or not record.get("updated_at"):
            return None
        try:
            newer = parse_ts(found["updated_at"]) > parse_ts(record["updated_at"])
        except (LorestoreError, TypeError, ValueError):
            return None
        return str(found["updated_at"]) if newer else None
