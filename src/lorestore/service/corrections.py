"""The tombstone rule inside a store transaction: gather the owner's live tombstones of a
value's digests and let ``core.tombstones`` decide; every service path that brings a value
in (write, restore, accepting a revision, reading what held at a time, import) asks here.
A write reads all it decides on at once (``Transaction.address_reads``): ``refuse_rejected``
and ``look_alike`` decide on what it read."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lorestore.core import tombstones
from lorestore.core.errors import LorestoreError
from lorestore.core.normalise import key_skeleton
from lorestore.core.scope import Scope
from lorestore.storage.protocol import AddressReads, Tombstone, Transaction


def check_tombstone(tx: Transaction, owner: str, scope: Scope, digests: Sequence[str]) -> None:
    """Refuse a value rejected at this scope or any broader one, in any case or form:
    ``digests`` are every digest a store may hold for it (``value_digests``)."""
    refuse_rejected(tx, tx.live_tombstones(owner, list(digests)), scope, digests)


def refuse_rejected(
    tx: Transaction, live: Sequence[Tombstone], scope: Scope, digests: Sequence[str]
) -> None:
    """``check_tombstone`` on the owner's ``live`` tombstones of ``digests``, read already."""
    tomb = tombstones.refusing_tombstone(live, scope, digests)
    if tomb is not None:
        raise rejected_value(tx, tomb)


def rejected_value(tx: Transaction, tomb: Tombstone) -> LorestoreError:
    """``core.tombstones.rejected_value``, with the lesson whose rejection it is read from
    the store (the command that lifts it names that lesson)."""
    found = tx.lessons_by_ids(tomb.owner, [tomb.lesson_id]) if tomb.lesson_id else []
    return tombstones.rejected_value(tomb, found[0].lesson if found else None)


def look_alike(key: str, value: str, reads: AddressReads, *, new_address: bool) -> list[str]:
    """Why a write that passed the tombstones is held for review, as reason codes, from what
    it read (``reads``): ``near_rejected:<key>`` (its value is near a value a live tombstone
    at the scope or a broader one rejected: a lesson's or a revision's) and, for a new
    address, ``confusable_key:<key>`` (its key looks like another key of the scope). Empty
    when it looks like nothing else."""
    reasons = []
    near = tombstones.near_rejection(value, reads.rejected)
    if near is not None:
        reasons.append(f"near_rejected:{near}")
    if new_address:
        others = tombstones.confusable_keys(key, reads.lookalikes)
        reasons += [f"confusable_key:{other}" for other in others]
    return reasons


def address_reads(
    tx: Transaction,
    owner: str,
    scope: Scope,
    key: str,
    digests: Sequence[str],
    alongside: Callable[[], None] | None = None,
) -> AddressReads:
    """``Transaction.address_reads`` for a write of a value of these ``digests`` at
    (``scope``, ``key``): the ladder and the key's skeleton its checks ask about."""
    ladder = sorted(tombstones.ladder(scope))
    skeleton = key_skeleton(key)
    return tx.address_reads(
        owner,
        scope.text,
        key,
        digests=list(digests),
        ladder=ladder,
        skeleton=skeleton,
        alongside=alongside,
    )
