"""The tombstone rule: which rejection refuses a value at a scope, and the refusal it gets.

Beside the refusal, the two holds of a write that looks like something else
(``look_alike``): a value near a rejected one (the same but for punctuation and symbols,
which a tombstone does not refuse, as ``a == b`` is not ``a = b``), and a new key confusable
with another key of its scope. Such a write is stored withheld for review (trust ``hold``).

Every path that brings a value in (write, restore, accepting a revision, import, migrate,
rejecting the copies of a value) gathers the owner's live tombstones of the value's digests
(``value_digests``) and asks ``refusing_tombstone``; a refusal is ``rejected_value``'s. Pure:
gathering is the caller's (a store transaction, or ``lorestore migrate``'s snapshot).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import Any, Protocol, TypeVar

from lorestore.core.errors import LorestoreError
from lorestore.core.normalise import key_skeleton, near_digest, value_digests
from lorestore.core.scope import Scope, parse_scope


class Rejection(Protocol):
    """What the rule reads of a tombstone (``storage.protocol.Tombstone`` is one)."""

    @property
    def id(self) -> str: ...
    @property
    def scope(self) -> str: ...
    @property
    def value_digest(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def actor(self) -> str: ...
    @property
    def created_at(self) -> str: ...
    @property
    def lesson_id(self) -> str | None: ...


class RejectedLesson(Protocol):
    """What a refusal says of the lesson whose rejection left the tombstone (a ``Lesson``)."""

    @property
    def scope(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def trust(self) -> str: ...
    @property
    def value(self) -> str: ...


R = TypeVar("R", bound=Rejection)


def ladder(scope: Scope | str) -> frozenset[str]:
    """The scope and every broader one: the scopes whose tombstones refuse a value there.
    A stored scope that no longer parses (a foreign row) is a ladder of itself alone."""
    if isinstance(scope, str):
        try:
            parsed = parse_scope(scope)
        except LorestoreError:
            return frozenset((scope,))
    else:
        parsed = scope
    return frozenset((parsed.text, *(s.text for s in parsed.broader())))


def refusing_tombstone(
    live: Iterable[R],
    scope: Scope | str,
    digests: Iterable[str],
    *,
    trust: str | None = None,
) -> R | None:
    """The tombstone that refuses a value at ``scope``, if any: of the ``live`` tombstones
    found for the value's owner, one of the value's ``digests`` (every digest a store may
    hold for it, ``value_digests``) at the scope or a broader one on its ladder; the oldest
    is named. A record that is itself ``rejected`` (an imported or copied correction)
    serves nothing, so nothing refuses it."""
    if trust == "rejected":
        return None
    wanted = frozenset(digests)
    rungs: frozenset[str] | None = None
    refusing: R | None = None
    for tomb in live:
        if tomb.value_digest not in wanted:
            continue
        if rungs is None:  # most values meet no tombstone: the ladder only when one is met
            rungs = ladder(scope)
        if tomb.scope in rungs and (refusing is None or tomb.created_at < refusing.created_at):
            refusing = tomb
    return refusing


def rejected_value(
    tomb: Rejection, lesson: RejectedLesson | None, *, where: str = ""
) -> LorestoreError:
    """The refusal of a value ``tomb`` holds, naming who rejected it, when and why, and
    ``lesson``, the one whose rejection it is (found by ``tomb.lesson_id``; None when it is
    gone), with the exact command that lifts it. ``where`` places the tombstone for a
    reader who may not assume the store (" in the target")."""
    details: dict[str, Any] = {
        "scope": tomb.scope,
        "rejected_by": tomb.actor,
        "rejected_at": tomb.created_at,
        "reason": tomb.reason,
        "lesson_id": tomb.lesson_id,
    }
    lift = "a reviewer can lift the rejection with `lorestore reject SCOPE KEY --undo`"
    if lesson is not None:
        details["key"] = lesson.key
        # Its own value, rejected: --undo; a revision's, or a value it has since replaced:
        # --undo --revision.
        own = lesson.trust == "rejected" and tomb.value_digest in value_digests(lesson.value)
        revision = "" if own else " --revision"
        lift = (
            "a reviewer can lift the rejection with `lorestore reject "
            f"{shlex.quote(lesson.scope)} {shlex.quote(lesson.key)} --undo{revision} "
            "--reason ...`"
        )
    return LorestoreError(
        "rejected_value",
        f"this value was rejected at {tomb.scope}{where} by {tomb.actor} on "
        f"{tomb.created_at}: {tomb.reason}",
        hint=f"write a corrected lesson instead; {lift}",
        details=details,
    )


def near_rejection(value: str, rejected: Iterable[tuple[str, str]]) -> str | None:
    """The key of a rejected lesson (``rejected``: key and value) whose value ``value`` is
    near (``near_digest``), if any."""
    near = near_digest(value)
    if near is None:
        return None
    for key, other in rejected:
        if near_digest(other) == near:
            return key
    return None


def confusable_keys(key: str, keys: Iterable[str]) -> list[str]:
    """The other keys of the scope (``keys``) that look like ``key``, sorted."""
    looks = key_skeleton(key)
    return sorted({other for other in keys if other != key and key_skeleton(other) == looks})
