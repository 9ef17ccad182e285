"""Turning a person's or agent's query text into a full-text expression, and list cursors."""

from __future__ import annotations

import base64
import json
import re

from lorestore.core.errors import LorestoreError

# A word, or a file name / path / dotted identifier kept whole (``tests/conftest.py``).
_WORD = re.compile(r"\w+(?:[./]\w+)*", re.UNICODE)
_PART = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 32
# PostgreSQL's english stop list (Snowball), so that both backends ignore the same words; on
# SQLite they would otherwise match nearly every lesson and add noise to BM25. Kept as text
# because 127 words read better that way than as a list literal.
STOP_WORDS = frozenset(
    """i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which who
    whom this that these those am is are was were be been being have has had having do does did
    doing a an the and but if or because as until while of at by for with about against between
    into through during before after above below to from up down in out on off over under again
    further then once here there when where why how all any both each few more most other some
    such no nor not only own same so than too very s t can will just don should now""".split()  # noqa: SIM905
)


def query_terms(text: str) -> list[str]:
    """Distinct lower-cased words of ``text`` in order, without stop words (unless there is
    nothing else). Identifiers like ``pg_dump`` stay whole; a file name like ``conftest.py``
    is kept whole and followed by its parts, because PostgreSQL indexes the whole name and
    SQLite the parts.

    Raises ``invalid_argument`` when there is no word to look for.
    """
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        parts = _PART.findall(word) if "." in word or "/" in word else []
        for term in (word, *parts):
            if any(ch.isalnum() for ch in term):
                seen.setdefault(term, None)
    if not seen:
        raise LorestoreError(
            "invalid_argument",
            "the search query has no words to look for",
            hint='search for words, e.g. "postgres migration"',
        )
    words = [w for w in seen if w not in STOP_WORDS] or list(seen)
    return words[:MAX_QUERY_TERMS]


def fts5_expression(terms: list[str]) -> str:
    """An FTS5 expression matching any of the words, each quoted so that no word is read as
    an operator (a quoted file name is a phrase of its parts); BM25 then ranks lessons that
    match more, and rarer, words first."""
    return " OR ".join(f'"{term}"' for term in terms)


def tsquery_expression(terms: list[str]) -> str:
    """A PostgreSQL ``to_tsquery`` expression matching any of the words. Each word is made of
    letters, digits and underscores, joined by '.' or '/', so none can be read as tsquery
    syntax. The search queries split the expression on " | " again to weigh each word."""
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
