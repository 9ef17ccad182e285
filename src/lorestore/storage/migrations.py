"""The shared migration runner: numbered ``NNNN_verb_object.sql`` files, forward-only, each
applied in one transaction and recorded with its SHA-256 checksum, for both backends (each
gives a ``Ledger``: ``sqlite/store.py``, ``postgres/setup.py``).

A migration that was applied and has since changed on disk is an error, never silently
re-run or skipped: the database would no longer match the files that claim to describe it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from lorestore.core.errors import LorestoreError
from lorestore.storage.queries import package_folder

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
    found: list[Migration] = []
    for entry in package_folder(package).iterdir():
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


def require_current(
    package: str, applied: dict[int, tuple[str, str]], *, what: str, hint: str
) -> None:
    """Refuse (``config_error``) a database that lacks some of ``package``'s migrations, one
    that is served or read but never migrated here; ``what`` names it in the message."""
    todo = pending(discover(package), applied)
    if todo:
        raise LorestoreError(
            "config_error",
            f"{what} lacks migrations {', '.join(m.name for m in todo)}",
            hint=hint,
        )


class Ledger(Protocol):
    """What the runner needs of a backend: its record of applied migrations, its migration
    lock, and a way to run one file."""

    def applied(self) -> dict[int, tuple[str, str]]:
        """number -> (name, checksum) of every applied migration; empty when there is no
        record yet. Read without the lock by the first check, under it by the others."""

    def locked(self) -> AbstractContextManager[None]:
        """One transaction that holds the backend's migration lock until it ends (SQLite:
        ``BEGIN IMMEDIATE``; PostgreSQL: a transaction inside the advisory lock its caller
        holds); committed when the block ends without an error, rolled back otherwise."""

    def prepare(self) -> None:
        """Create the record (``schema_migrations``) when there is none; under the lock."""

    def apply(self, migration: Migration) -> None:
        """Run the migration's SQL and record it with its checksum; under the lock."""


def migrate(ledger: Ledger, package: str) -> list[Migration]:
    """Apply every pending migration of ``package``, each in one transaction of its own, and
    return those this call applied.

    What is pending is read first without the lock, so that the common open, with nothing to
    apply, takes no lock at all (and a changed applied file is refused there too); then again
    under the lock before each migration, since another process may have applied it since.
    """
    known = discover(package)
    if not pending(known, ledger.applied()):
        return []
    with ledger.locked():
        ledger.prepare()
    done: list[Migration] = []
    for migration in known:
        with ledger.locked():
            if migration not in pending(known, ledger.applied()):
                continue
            ledger.apply(migration)
        done.append(migration)
    return done
