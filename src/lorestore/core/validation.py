"""Limits on what a lesson may hold (key, value, tags, TTL), each refused with a stable code."""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime, timedelta

from lorestore.core.errors import LorestoreError
from lorestore.core.normalise import first_invisible, is_blank
from lorestore.core.secrets import find_secret

MAX_KEY_CHARS = 512
MAX_VALUE_BYTES = 64 * 1024
MAX_TAGS = 32
MAX_TAG_CHARS = 64
# PostgreSQL refuses a btree entry over 2,704 bytes, and the address indexes hold owner, scope
# and key (lessons_address; audit_log_address adds the event id). Scope and key within 2,400
# bytes of UTF-8 leave room for the owner (at most 68 bytes) and the entry's own overhead.
# Only keys of 3- and 4-byte characters under a long non-ASCII branch reach it. SQLite has no
# such limit; both refuse alike so that a lesson written on one can move to the other.
MAX_ADDRESS_BYTES = 2400
MIN_TTL_DAYS = 1
MAX_TTL_DAYS = 365


# Unicode's control characters (category Cc) are exactly these two ranges.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# A UUID as str(uuid.UUID(...)) writes it: how every stored lesson id is spelled (an import
# canonicalises the ids it is given, portable/records.py).
CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")


def unstorable(text: str) -> str | None:
    """Why neither store could keep ``text`` as UTF-8, if so: a NUL (PostgreSQL refuses it)
    or a lone surrogate (not Unicode text; a command-line argument not in UTF-8 becomes one)."""
    why = (
        "contains a character that is not text: a NUL (\\x00), or half of a UTF-16 surrogate "
        "pair (a string cut inside an emoji, or bytes that are not UTF-8)"
    )
    if "\x00" in text:
        return why  # over MCP stdio, half a surrogate pair arrives as a NUL (transports/mcp)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return why
    return None


def has_control(text: str) -> bool:
    """Whether ``text`` holds a control character (Unicode category Cc)."""
    return _CONTROL.search(text) is not None


def validate_key(key: str) -> str:
    """A key is 1-512 characters with no control characters; surrounding spaces are trimmed."""
    if not isinstance(key, str) or is_blank(key):
        raise LorestoreError(
            "invalid_key",
            "a key is required",
            hint="name the lesson, e.g. integration-tests-need-postgres (a key of spaces or "
            "invisible characters only is none)",
        )
    key = key.strip()
    if len(key) > MAX_KEY_CHARS:
        raise LorestoreError(
            "invalid_key",
            f"key is {len(key)} characters; the limit is {MAX_KEY_CHARS}",
            hint="use a short name and put detail in the value",
        )
    if has_control(key):
        raise LorestoreError(
            "invalid_key",
            "key contains a control character (newline, tab, ...)",
            hint="keys are one line of printable text",
        )
    return key


def validate_new_key(key: str) -> str:
    """``validate_key``, and no invisible character (default-ignorable, such as a zero-width
    space, or a blank glyph such as U+2800) anywhere: a key written with one looks like
    another key and is not that key. Keys stored before this rule still read."""
    key = validate_key(key)
    invisible = first_invisible(key)
    if invisible is not None:
        name = unicodedata.name(invisible, "a format character")
        visible = "".join(c for c in key if first_invisible(c) is None)
        raise LorestoreError(
            "invalid_key",
            f"key contains an invisible character (U+{ord(invisible):04X} {name})",
            hint=f"keys are visible text: write it as {visible!r}",
            details={"code_point": f"U+{ord(invisible):04X}"},
        )
    return key


def validate_address(scope: str, key: str) -> None:
    """Refuse a (valid) scope and key that together take more than MAX_ADDRESS_BYTES."""
    size = len(scope.encode("utf-8", errors="surrogatepass")) + len(
        key.encode("utf-8", errors="surrogatepass")
    )
    if size > MAX_ADDRESS_BYTES:
        raise LorestoreError(
            "invalid_key",
            f"scope and key take {size} bytes of UTF-8 together; the limit is "
            f"{MAX_ADDRESS_BYTES} bytes",
            hint="use a shorter key (or a broader scope) and put detail in the value",
            details={"bytes": size, "limit": MAX_ADDRESS_BYTES},
        )


def validate_value(value: str) -> str:
    """A value is 1 B - 64 KiB of UTF-8, counted in bytes, holding no secret (``core.secrets``);
    it is stored exactly as given."""
    if not isinstance(value, str) or is_blank(value):
        raise LorestoreError(
            "invalid_value",
            "a lesson value is required and cannot be blank (whitespace and invisible "
            "characters only)",
            hint="pass the text as an argument or on stdin",
        )
    size = len(value.encode("utf-8", errors="surrogatepass"))
    if size > MAX_VALUE_BYTES:
        raise LorestoreError(
            "value_too_large",
            f"value is {size} bytes; the limit is {MAX_VALUE_BYTES} bytes (64 KiB)",
            hint="split it into several lessons or link to a document",
            details={"bytes": size, "limit": MAX_VALUE_BYTES},
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LorestoreError("invalid_value", "value is not valid UTF-8 (lone surrogate)") from exc
    # Every write path validates here (write, import, a captured review comment), so no path
    # stores a credential; the refusal names the pattern, never what it matched.
    pattern = find_secret(value)
    if pattern is not None:
        raise LorestoreError(
            "invalid_value",
            f"the value holds what looks like a secret ({pattern}); lorestore never stores "
            "credentials",
            hint="take the secret out: say where it lives (an environment variable, a vault "
            "path), not what it is",
            details={"secret": pattern},
        )
    return value


def validate_tags(tags: list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """At most 32 tags of at most 64 characters; trimmed, lower-cased, de-duplicated, sorted."""
    if not tags:
        return ()
    if len(tags) > MAX_TAGS:
        raise LorestoreError("invalid_tags", f"{len(tags)} tags given; the limit is {MAX_TAGS}")
    cleaned: set[str] = set()
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip():
            raise LorestoreError("invalid_tags", "a tag cannot be blank")
        tag = tag.strip().lower()
        if len(tag) > MAX_TAG_CHARS:
            raise LorestoreError(
                "invalid_tags",
                f"tag {tag[:20]!r}... is {len(tag)} characters; the limit is {MAX_TAG_CHARS}",
            )
        if has_control(tag) or "," in tag:
            raise LorestoreError(
                "invalid_tags",
                f"tag {tag!r} contains a comma or control character",
                hint="pass several tags as separate --tag options",
            )
        cleaned.add(tag)
    return tuple(sorted(cleaned))


def validate_ttl(ttl_days: int | None) -> int | None:
    """A TTL is a whole number of days from 1 to 365."""
    if ttl_days is None:
        return None
    if isinstance(ttl_days, bool) or not isinstance(ttl_days, int):
        raise LorestoreError("invalid_ttl", "ttl_days must be a whole number of days")
    if not MIN_TTL_DAYS <= ttl_days <= MAX_TTL_DAYS:
        raise LorestoreError(
            "invalid_ttl",
            f"ttl_days is {ttl_days}; it must be between {MIN_TTL_DAYS} and {MAX_TTL_DAYS}",
            hint="omit it to keep the lesson until it is archived",
        )
    return ttl_days


def expiry(now: datetime, ttl_days: int) -> datetime:
    return now + timedelta(days=ttl_days)
