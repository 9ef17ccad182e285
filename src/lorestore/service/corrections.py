"""The tombstone rule inside a store transaction: gather the owner's live tombstones of a
value's digests and let ``core.tombstones`` decide; every service path that brings a value
in (write, restore, accepting a revision, reading what held at a time, import) asks here.
``look_alike`` gathers what a write's holds are decided on (rejected values on the ladder,
keys of the scope)."""

from __future__ import annotations

from collections.abc import Sequence

from lorestore.core import tombstones
from lorestore.core.errors import LorestoreError
from lorestore.core.normalise import key_skeleton
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


def look_alike(
    tx: Transaction, owner: str, scope: Scope, key: str, value: str, *, new_address: bool
) -> list[str]:
    """Why a write that passed the tombstones is held for review, as reason codes:
    ``near_rejected:<key>`` (its value is near a value a live tombstone at the scope or a
    broader one rejected: a lesson's or a revision's) and, for a new address,
    ``confusable_key:<key>`` (its key looks like another key of the scope). Empty when it
    looks like nothing else."""
    reasons = []
    rungs = sorted(tombstones.ladder(scope))
    near = tombstones.near_rejection(value, tx.rejected_values(owner, rungs))
    if near is not None:
        reasons.append(f"near_rejected:{near}")
    if new_address:
        keys = tx.lookalike_keys(owner, scope.text, key_skeleton(key))
        reasons += [f"confusable_key:{other}" for other in tombstones.confusable_keys(key, keys)]
    return reasons
