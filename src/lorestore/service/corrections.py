"""The tombstone rule inside a store transaction: gather the owner's live tombstones of a
value's digests and let ``core.tombstones`` decide; every service path that brings a value
in (write, restore, accepting a revision, reading what held at a time, import) asks here."""

from __future__ import annotations

from collections.abc import Sequence

from lorestore.core import tombstones
from lorestore.core.errors import LorestoreError
from lorestore.core.scope import Scope
from lorestore.storage.protocol import Tombstone, Transaction


def check_tombstone(tx: Transaction, owner: str, scope: Scope, digests: Sequence[str]) -> None:
    """Refuse a value rejected at this scope or any broader one, in any case or form:
    ``digests`` are every digest a store may hold for it (``value_digests``)."""
    live = tx.live_tombstones(owner, list(digests))
    tomb = tombstones.refusing_tombstone(live, scope, digests)
    if tomb is not None:
        raise rejected_value(tx, tomb)


def rejected_value(tx: Transaction, tomb: Tombstone) -> LorestoreError:
    """``core.tombstones.rejected_value``, with the lesson whose rejection it is read from
    the store (the command that lifts it names that lesson)."""
    found = tx.lessons_by_ids(tomb.owner, [tomb.lesson_id]) if tomb.lesson_id else []
    return tombstones.rejected_value(tomb, found[0].lesson if found else None)
