"""Turning a person's or agent's query text into a full-text expression, and list cursors."""

from __future__ import annotations

import base64
import json
import re

from lorestore.core.errors import LorestoreError

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 32


def query_terms(text: str) -> list[str]:
    """Distinct lower-cased words of ``text`` in order; identifiers like ``pg_dump`` stay whole.

    Raises ``invalid_argument`` when there is no word to look for.
    """
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if any(ch.isalnum() for ch in word):
            seen.setdefault(word, None)
    if not seen:
        raise LorestoreError(
            "invalid_argument",
            "the search query has no words to look for",
            hint='search for words, e.g. "postgres migration"',
        )
    return list(seen)[:MAX_QUERY_TERMS]


def fts5_expression(terms: list[str]) -> str:
    """An FTS5 expression matching any of the words, each quoted so that no word is read as
    an operator; BM25 then ranks lessons that match more, and rarer, words first."""
    return " OR ".join(f'"{term}"' for term in terms)


def tsquery_expression(terms: list[str]) -> str:
    """A PostgreSQL ``to_tsquery`` expression matching any of the words. Each word is made of
    letters, digits and underscores only, so none can be read as tsquery syntax."""
    return " | ".join(terms)


def encode_cursor(*parts: str | int) -> str:
    raw = json.dumps(list(parts), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, shape: tuple[type, ...]) -> tuple[object, ...]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        parts = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if len(parts) != len(shape) or not all(
            isinstance(p, t) for p, t in zip(parts, shape, strict=True)
        ):
            raise ValueError(parts)
    except (ValueError, TypeError) as exc:
        raise LorestoreError(
            "invalid_cursor",
            "the cursor is not one this store issued",
            hint="pass the next_cursor of the previous page unchanged",
        ) from exc
    return tuple(parts)
