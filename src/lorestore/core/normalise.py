"""Value normalisation and its digest: the identity of a value for recurrence and tombstones.

Two values that differ only in case, spacing, Unicode form or invisible characters are the
same lesson; the digest of the normalised text is what recurrence counts and what a tombstone
remembers (never the text itself).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

# Unicode's default-ignorable code points (DerivedCoreProperties.txt): characters that
# render as nothing, such as zero-width spaces and joiners, the soft hyphen, bidirectional
# controls, variation selectors, fillers and tags. A value that differs from another only by
# them reads the same, so they are not part of its identity: a rejected value cannot come
# back with one inside. The list is written out (not derived from ``unicodedata``) so that a
# digest does not change with the Python that computes it.
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)


def normalise_value(value: str) -> str:
    """Default-ignorable characters removed, NFKC, case-folded, every run of whitespace
    collapsed to one space, trimmed."""
    if not value.isascii():
        value = _IGNORABLE.sub("", value)
    return _folded(value)


def is_blank(value: str) -> bool:
    """Whether the value shows nothing: only whitespace and default-ignorable characters."""
    return not (value if value.isascii() else _IGNORABLE.sub("", value)).strip()


def _folded(value: str) -> str:
    if value.isascii():  # NFKC leaves ASCII as it is, and casefold is lower for it
        return " ".join(value.lower().split())
    text = unicodedata.normalize("NFKC", value).casefold()
    # casefold can produce sequences that NFKC would compose differently; normalise again.
    text = unicodedata.normalize("NFKC", text)
    # str.split() splits on exactly the characters a regex's \s matches (str.isspace), and
    # faster: every write and every imported lesson computes this.
    return " ".join(text.split())


def value_digest(value: str) -> str:
    """Hex SHA-256 of the normalised value."""
    return _sha256(normalise_value(value))


def value_digests(value: str) -> tuple[str, ...]:
    """Every digest a store may hold for this value: its digest, and for a value with
    default-ignorable characters also its digest with them kept, as stores written before
    they were removed hold it (in a lesson, its versions or a tombstone). Looking a value
    up (is it rejected? is it the lesson's current value?) matches any of these."""
    kept = digest_with_ignorables(value)
    return (value_digest(value),) if kept is None else (value_digest(value), kept)


def digest_with_ignorables(value: str) -> str | None:
    """For a value with default-ignorable characters, its digest with them kept; else None."""
    if value.isascii() or _IGNORABLE.search(value) is None:
        return None
    return _sha256(_folded(value))


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
