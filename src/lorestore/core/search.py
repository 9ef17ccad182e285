"""Turning a person's or agent's query text into a full-text expression (identifiers split
into their parts, the aliases we own added), and list cursors."""

from __future__ import annotations

import base64
import hashlib
import json
import re

from lorestore.core.errors import LorestoreError

# A word, or a file name / path / dotted identifier kept whole (``tests/conftest.py``).
_WORD = re.compile(r"\w+(?:[./]\w+)*", re.UNICODE)
_PART = re.compile(r"\w+", re.UNICODE)
# The words of a CamelCase or snake_case identifier: an acronym before a capitalised word
# (HTTPServer: HTTP, Server), a capitalised or lower-case word, digits.
_IDENTIFIER_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
MAX_QUERY_TERMS = 32
# Names of one tool that share no stem, kept short and owned here (docs/search.md): a query
# naming one also looks for the others, on both backends. Common words with a short form
# (db, config, repo, env) are left out: measured with the eval, looking for both diluted the
# other words of a task and cost more than it found.
ALIASES: tuple[frozenset[str], ...] = tuple(
    frozenset(group.split())
    for group in (
        "pg postgres postgresql",
        "k8s kubernetes",
        "js javascript",
        "ts typescript",
        "gh github",
        "tf terraform",
        "mongo mongodb",
    )
)
_ALIAS_OF = {word: group for group in ALIASES for word in group}
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


def fold_case(text: str) -> str:
    """Lower case as both indexes fold the text they index: one character at a time, each to
    one character (FTS5's unicode61 and PostgreSQL's lower() under the database's ctype).
    ``str.lower`` differs on two counts: "İ" becomes "i" and a combining dot, which splits the
    word in two, and a capital sigma ending a word becomes the final small sigma, which
    PostgreSQL indexes as the ordinary small sigma."""
    if text.isascii():
        return text.lower()
    return "".join(ch.lower()[0] for ch in text)


def query_terms(text: str) -> list[str]:
    """Distinct lower-cased words of ``text`` in order, without stop words. Identifiers like
    ``pg_dump`` stay whole; a file name like ``conftest.py`` is kept whole and followed by its
    parts, because PostgreSQL indexes the whole name and SQLite the parts.

    Raises ``invalid_argument`` when there is no word to look for, stop words included:
    PostgreSQL's index leaves them out, so they could never match there, and on SQLite they
    would match nearly everything; either way the answer would not depend on the query.
    """
    seen: dict[str, None] = {}
    for word in _WORD.findall(text):
        for term in (fold_case(word), *_parts(word)):
            if any(ch.isalnum() for ch in term):
                seen.setdefault(term, None)
    if not seen:
        raise LorestoreError(
            "invalid_argument",
            "the search query has no words to look for",
            hint='search for words, e.g. "postgres migration"',
        )
    words = [w for w in seen if w not in STOP_WORDS]
    words += [alias for w in words for alias in sorted(_ALIAS_OF.get(w, ())) if alias not in seen]
    words = list(dict.fromkeys(words))
    if not words:
        raise LorestoreError(
            "invalid_argument",
            "the search query has only stop words ("
            + ", ".join(list(seen)[:MAX_QUERY_TERMS])
            + "), which the index leaves out",
            hint='add a word that says what the lesson is about, e.g. "config file"',
            details={"stop_words": list(seen)[:MAX_QUERY_TERMS]},
        )
    return words[:MAX_QUERY_TERMS]


def _parts(word: str) -> list[str]:
    """The parts a query word is also looked for by, lower-cased: a path's or file name's
    (``tests/conftest.py``: PostgreSQL indexes the whole name, SQLite the parts), and an
    identifier's (``retry_budget``, ``RetryBudget``: retry, budget), so a task naming the
    identifier finds a lesson that spells its words out."""
    if "." in word or "/" in word:
        return [fold_case(p) for p in _PART.findall(word)]
    if "_" in word or _CAMEL.search(word):
        return [fold_case(p) for p in _IDENTIFIER_PART.findall(word)]
    return []


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


# Cursors carry row ids: positive and within a 64-bit signed integer, as both stores keep them.
MAX_ROW_ID = 2**63 - 1


def _fits(part: object, kind: type) -> bool:
    if kind is int:
        return type(part) is int and 1 <= part <= MAX_ROW_ID  # bool is an int subclass
    return type(part) is kind


def invalid_cursor() -> LorestoreError:
    return LorestoreError(
        "invalid_cursor",
        "the cursor is not one this store issued",
        hint="pass the next_cursor of the previous page unchanged",
    )


def decode_cursor(cursor: str, shape: tuple[type, ...]) -> tuple[object, ...]:
    """The parts of a cursor ``encode_cursor`` made, each of the type ``shape`` names; an
    int part must be a row id. Anything else, hand-made or damaged, is ``invalid_cursor``."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        parts = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if (
            not isinstance(parts, list)
            or len(parts) != len(shape)
            or not all(_fits(p, t) for p, t in zip(parts, shape, strict=True))
        ):
            raise ValueError(parts)
    except (ValueError, TypeError, RecursionError) as exc:
        raise invalid_cursor() from exc
    if encode_cursor(*parts) != cursor:  # only the spelling lorestore writes (no padding)
        raise invalid_cursor()
    return tuple(parts)


def listing_mark(*filters: object) -> str:
    """A short fingerprint of what a page lists (its scope, tags, time window): a cursor
    carries it, so that one issued for one listing is refused by another rather than
    silently skipping or repeating rows there."""
    text = json.dumps(filters, separators=(",", ":"), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def paged_cursor(cursor: str, shape: tuple[type, ...], mark: str) -> tuple[object, ...]:
    """A cursor's parts (``shape``), refused unless it was issued for this listing."""
    *parts, issued_for = decode_cursor(cursor, (*shape, str))
    if issued_for != mark:
        raise LorestoreError(
            "invalid_cursor",
            "the cursor was issued for another listing (other scope, tags or time window)",
            hint="pass a next_cursor with the same filters it came with, or start again "
            "without a cursor",
        )
    return tuple(parts)
