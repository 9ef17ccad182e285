"""Compact JSON text from an encoder built once.

``json.JSONEncoder.encode`` builds its C encoder afresh on every call: for a short list or
object that is most of the cost, and an import encodes several per lesson (tags, source,
the audit event and its hash). ``compact_encoder`` builds the C encoder once and writes
exactly what ``json.dumps(value, ensure_ascii=False, separators=(",", ":"), ...)`` writes,
falling back to ``JSONEncoder.encode`` on a Python without the C encoder.

``dumps`` is the JSON text every stored JSON column and every interchange digest is made
of: compact, keys sorted, no NaN.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _encoder
from typing import Any


def compact_encoder(*, sort_keys: bool, allow_nan: bool) -> Callable[[Any], str]:
    """An ``encode(value) -> str`` for JSON values without cycles (the caller's own data)."""
    reference = json.JSONEncoder(
        ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys, allow_nan=allow_nan
    )
    make = getattr(_encoder, "c_make_encoder", None)
    if make is None:
        return reference.encode
    try:
        # The arguments JSONEncoder.iterencode passes: no circular check (markers None), the
        # non-ASCII string writer, no indent, compact separators.
        chunks = make(
            None,
            reference.default,
            _encoder.encode_basestring,
            None,
            ":",
            ",",
            sort_keys,
            False,
            allow_nan,
        )
    except TypeError:  # another Python's signature: the encoder as JSONEncoder builds it
        return reference.encode

    def encode(value: Any) -> str:
        if isinstance(value, str):
            return _encoder.encode_basestring(value)
        return "".join(chunks(value, 0))

    return encode


# allow_nan=False: NaN and Infinity are not JSON, and PostgreSQL's jsonb refuses them.
_sorted = compact_encoder(sort_keys=True, allow_nan=False)


def dumps(value: Any) -> str:
    """Compact JSON text, keys sorted, no NaN; an empty list or object costs nothing."""
    if not value and type(value) in (list, dict):
        return "[]" if type(value) is list else "{}"
    return _sorted(value)
