"""Typed errors with the stable codes of DESIGN §11; every surface renders these the same way."""

from __future__ import annotations

from typing import Any

# Codes whose cause is the caller's input: the CLI exits 2 for these, 1 for the rest.
BAD_INPUT_CODES = frozenset(
    {
        "invalid_scope",
        "invalid_key",
        "invalid_value",
        "value_too_large",
        "invalid_tags",
        "invalid_ttl",
        "invalid_argument",
        "invalid_cursor",
        "invalid_time",
    }
)

KNOWN_CODES = BAD_INPUT_CODES | {
    "not_found",
    "rejected_value",
    "version_conflict",
    "forbidden",
    "unauthenticated",
    "rate_limited",
    "cap_exceeded",
    "conflict",
    "archived",
    "expired",
    "migration_error",
    "config_error",
    "busy",
    "storage_error",
    "internal",
}


class LorestoreError(Exception):
    """An error a caller can act on: a stable ``code``, a ``message`` and, where it helps, a
    ``hint`` with the fix."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        hint: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        assert code in KNOWN_CODES, code
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        self.details = details or {}

    @property
    def bad_input(self) -> bool:
        return self.code in BAD_INPUT_CODES

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.hint:
            body["hint"] = self.hint
        if self.details:
            body["details"] = self.details
        return body

    def __repr__(self) -> str:
        return f"LorestoreError({self.code!r}, {self.message!r})"


def not_found(scope: str, key: str, *, active: bool = True) -> LorestoreError:
    """No lesson served at the address (``active``), or none there in any state."""
    return LorestoreError(
        "not_found",
        f"no {'active ' if active else ''}lesson at {scope} / {key}",
        hint="list the scope with `lorestore list SCOPE` to see what is there",
        details={"scope": scope, "key": key},
    )


# The fixes for cap_exceeded on either store. Expired lessons stay active rows (hidden at once)
# until the purge sweep erases them, so they count against the cap on active lessons until
# then. Every byte stored counts against the byte cap whatever its lesson's status (archived
# lessons, every version, kept foreign records) until a hard delete or a purge erases it.
CAP_HINT = (
    "archive or delete lessons you no longer need, purge expired ones (they count until "
    "purged: lorestore purge-expired), or ask an admin to raise the limit (lorestore db cap)"
)
BYTES_CAP_HINT = (
    "archived lessons and every version count too: erase lessons you no longer need "
    "(lorestore delete SCOPE KEY erases one with its history, lorestore purge the ones "
    "archived long ago), or ask an admin to raise the limit (lorestore db cap OWNER --bytes SIZE)"
)
# A copy (lorestore migrate) that would take an owner past a cap of the target.
TARGET_CAP_HINT = (
    "raise the owner's caps in the target (lorestore db cap OWNER LIMIT --bytes SIZE "
    "--database-url TARGET), or archive or delete lessons there"
)
# Which cap a cap_exceeded names (its details["cap"]), and the fix of each.
CAPS = {"active_lessons": CAP_HINT, "stored_bytes": BYTES_CAP_HINT}


def cap_exceeded(cap: str, message: str | None = None) -> LorestoreError:
    """The refusal of a write beyond an owner's cap on ``active_lessons`` or ``stored_bytes``
    (``message``: the database's, when it names the owner and the figures)."""
    what = "active lessons" if cap == "active_lessons" else "stored bytes"
    return LorestoreError(
        "cap_exceeded",
        message or f"this owner has reached its limit of {what}",
        hint=CAPS[cap],
        details={"cap": cap},
    )
