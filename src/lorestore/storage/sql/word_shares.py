"""How many of the newest lessons hold a word, kept a while (LessonPrimitives._word_classes).

Counting them reads the newest lessons a reader may see: milliseconds of every search and
recall (5-6 ms on PostgreSQL at 100k lessons), for an answer that moves slowly, since a word's
share of the newest COMMON_SAMPLE lessons changes only as thousands are written. A store keeps
one ``WordShares``; an entry is used for ``TTL`` seconds, then counted again. A count that old
only moves the window a frequent word is ranked in, and no match is lost by it
(docs/search.md). A write does not make the entries stale: every recall writes (its log)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

TTL = 30.0  # seconds
SIZE = 4096  # entries: samples and words, each per reader

# (what, reader, sample size, word): "s" the sample's span, "w" a word's holders in it
_Key = tuple[str, str, int, str]


@dataclass(frozen=True, slots=True)
class Span:
    """The newest lessons a reader may see, as many as sampled: how many there were (fewer
    than asked in a small store) and the row keys they span."""

    total: int
    oldest: int
    newest: int


class WordShares:
    """Per reader (whose lessons the count covers: the actor on PostgreSQL, under its
    row-level security; the whole store on SQLite) and sample size: the sample's span, and
    each word's holders in it. Safe across a server's worker threads."""

    def __init__(
        self, ttl: float = TTL, size: int = SIZE, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._ttl = ttl
        self._size = size
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[_Key, tuple[Span | int, float]] = OrderedDict()

    def get(
        self, reader: str, sample: int, words: Sequence[str]
    ) -> tuple[Span | None, dict[str, int]]:
        """The sample's span as last read (None when not fresh), and the holders of each word
        of ``words`` kept and fresh, as last counted (counts of different moments within TTL,
        which the classes they decide tolerate)."""
        now = self._clock()
        known: dict[str, int] = {}
        with self._lock:
            span = self._fresh(("s", reader, sample, ""), now)
            for word in words:
                held = self._fresh(("w", reader, sample, word), now)
                if isinstance(held, int):
                    known[word] = held
        return (span if isinstance(span, Span) else None), known

    def keep(self, reader: str, sample: int, span: Span, held: Mapping[str, int]) -> None:
        expires = self._clock() + self._ttl
        items: list[tuple[_Key, Span | int]] = [(("s", reader, sample, ""), span)]
        items += [(("w", reader, sample, word), n) for word, n in held.items()]
        with self._lock:
            for key, value in items:
                self._entries[key] = (value, expires)
                self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def _fresh(self, key: _Key, now: float) -> Span | int | None:
        entry = self._entries.get(key)
        if entry is None or entry[1] <= now:
            return None
        self._entries.move_to_end(key)
        return entry[0]
