"""The shared migration runner: numbered ``NNNN_verb_object.sql`` files, forward-only, each
applied in one transaction and recorded with its SHA-256 checksum.

A migration that was applied and has since changed on disk is an error, never silently
re-run or skipped: the database would no longer match the files that claim to describe it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable

from lorestore.core.errors import LorestoreError

_FILENAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    number: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


def discover(package: str) -> list[Migration]:
    """Migrations shipped in ``package`` (a folder of ``.sql`` files), in order."""
    folder: Traversable = resources.files(package)
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _FILENAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), entry.name, entry.read_text("utf-8")))
    found.sort(key=lambda m: m.number)
    numbers = [m.number for m in found]
    if numbers != list(range(1, len(found) + 1)):
        raise LorestoreError(
            "migration_error",
            f"migrations in {package} are not numbered 1..n without gaps: {numbers}",
        )
    return found


def pending(
    migrations: Iterable[Migration], applied: dict[int, tuple[str, str]]
) -> list[Migration]:
    """Migrations not yet applied; ``applied`` maps number -> (name, checksum).

    Raises ``migration_error`` when an applied file changed or the database is newer than
    this code.
    """
    todo: list[Migration] = []
    known = {m.number: m for m in migrations}
    for number, (name, checksum) in applied.items():
        migration = known.get(number)
        if migration is None:
            raise LorestoreError(
                "migration_error",
                f"the database has migration {number:04d} ({name}) that this lorestore does not "
                "know; it was written by a newer version",
                hint="upgrade lorestore",
            )
        if migration.checksum != checksum:
            raise LorestoreError(
                "migration_error",
                f"migration {migration.name} changed after it was applied "
                f"(recorded {checksum[:12]}, file {migration.checksum[:12]})",
                hint="migrations are forward-only: restore the file and add a new migration",
            )
    for migration in known.values():
        if migration.number not in applied:
            todo.append(migration)
    return todo


def apply_all(
    migrations: list[Migration],
    applied: dict[int, tuple[str, str]],
    apply_one: Callable[[Migration], None],
) -> list[Migration]:
    """Apply every pending migration in order with ``apply_one``; return what was applied."""
    todo = pending(migrations, applied)
    for migration in todo:
        apply_one(migration)
    return todo
