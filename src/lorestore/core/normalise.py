"""Value normalisation and its digest: the identity of a value for recurrence and tombstones.

Two values that differ only in case, spacing or Unicode form are the same lesson; the digest
of the normalised text is what recurrence counts and what a tombstone remembers (never the
text itself).
"""

from __future__ import annotations

import hashlib
import unicodedata


def normalise_value(value: str) -> str:
    """NFKC, case-folded, every run of whitespace collapsed to one space, trimmed."""
    text = unicodedata.normalize("NFKC", value).casefold()
    # casefold can produce sequences that NFKC would compose differently; normalise again.
    text = unicodedata.normalize("NFKC", text)
    # str.split() splits on exactly the characters a regex's \s matches (str.isspace), and
    # faster: every write and every imported lesson computes this.
    return " ".join(text.split())


def value_digest(value: str) -> str:
    """Hex SHA-256 of the normalised value."""
    return hashlib.sha256(normalise_value(value).encode("utf-8")).hexdigest()
