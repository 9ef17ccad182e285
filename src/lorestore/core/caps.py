"""The per-owner caps an operator sets (`lorestore db cap`): their bounds, and the forms a
limit is written in (a count or a size, ``default`` to follow the store's, ``none`` for no
default). The stores keep and enforce them (owner_stats, cap_defaults)."""

from __future__ import annotations

import re

from lorestore.core.errors import LorestoreError

MAX_ACTIVE_LIMIT = 10_000_000
MAX_BYTES_LIMIT = 1024**5  # 1 PiB
_UNITS = {"": 1, "b": 1, "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}
_SIZE = re.compile(r"(\d+)\s*([a-z]*)")

# The written forms of a limit that is not a number.
DEFAULT = "default"  # an owner's cap follows the store's default
NONE = "none"  # the store's default is no cap


def parse_limit(text: str, *, what: str, of_default: bool) -> int | None:
    """A cap as written: a count of active lessons (``what`` "active") or a size in bytes
    with an optional binary unit (``what`` "bytes": 512MiB, 1GiB); ``default`` for an owner's
    (None: follow the store's), ``none`` for the store's default (None: no cap)."""
    word = text.strip().lower()
    keyword = NONE if of_default else DEFAULT
    if word == keyword:
        return None
    match = _SIZE.fullmatch(word.replace("_", "").replace(",", ""))
    units = _UNITS if what == "bytes" else {"": 1}
    ceiling = MAX_BYTES_LIMIT if what == "bytes" else MAX_ACTIVE_LIMIT
    if match and match.group(2) in units:
        value = int(match.group(1)) * units[match.group(2)]
        if value <= ceiling:
            return value
    if what == "bytes":
        form = (
            f"a size such as 512MiB or 1GiB (B, KiB, MiB, GiB, TiB; at most {format_size(ceiling)})"
        )
    else:
        form = f"a number of active lessons (at most {ceiling:,})"
    example = (
        "lorestore db cap default 10000 --bytes 1GiB"
        if of_default
        else "lorestore db cap org:acme 50000 --bytes 2GiB"
    )
    raise LorestoreError(
        "invalid_argument",
        f"{text!r} is not a cap: give {form}, or {keyword!r}",
        hint=f"e.g. {example}",
    )


def format_size(size: int) -> str:
    """A byte count as people read it: 1 GiB, 512 MiB, 4,004 B."""
    for unit, factor in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= factor:
            scaled = size / factor
            return f"{scaled:,.0f} {unit}" if scaled == int(scaled) else f"{scaled:,.1f} {unit}"
    return f"{size:,} B"
