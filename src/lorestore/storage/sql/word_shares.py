"""How many of the newest lessons hold a word, kept a while (LessonPrimitives._word_classes).

Counting them reads the newest lessons a reader may see: milliseconds of every search and
recall (5-6 ms on PostgreSQL at 100k lessons), for an answer that moves slowly, since a word's
share of the newest COMMON_SAMPLE lessons changes only as thousands are written. A store keeps
one ``WordShares``; an entry is used for ``TTL`` seconds, then counted again. A count that old
only moves the window a frequent word is ranked in, and no match is lost by it
(docs/search.md). Every write cannot make the entries stale: recall logs each call it answers."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

TTL = 30.0  # seconds
SIZE = 4096  # entries: samples and words, each per reader

# (what, reader, sample size, word): "s" the sample, "w" a word's holders in it
_Key = tuple[str, str, int, str]


@dataclass(frozen=True, slots=True)
class Sample:
    """The newest lessons a reader may see, as many as sampled: how many there were (fewer
    than asked in a small store), the row keys they span, and each word's holders among them."""

    total: int
    oldest: int
    newest: int
    held: list[int]


class WordShares:
    """Per reader (whose lessons the count covers: the actor on PostgreSQL, under its
    row-level security; the whole store on SQLite) and sample size: the sample's size and span,
    and each word's holders in it. Safe across a server's worker threads."""

    def __init__(self, ttl: float = TTL, size: int = SIZE) -> None:
        self._ttl = ttl
        self._size = size
        self._lock = threading.Lock()
        self._entries: OrderedDict[_Key, tuple[tuple[int, ...], float]] = OrderedDict()

    def get(self, reader: str, sample: int, words: Sequence[str]) -> Sample | None:
        """The sample as kept, or None unless it and every word are known and fresh."""
        keys: list[_Key] = [("s", reader, sample, "")]
        keys += [("w", reader, sample, word) for word in words]
        now = time.monotonic()
        values = []
        with self._lock:
            for key in keys:
                entry = self._entries.get(key)
                if entry is None or entry[1] <= now:
                    return None
                self._entries.move_to_end(key)
                values.append(entry[0])
        (total, oldest, newest, at), held = values[0], values[1:]
        if any(counted != at for _, counted in held):  # not from one count: count again
            return None
        return Sample(total, oldest, newest, [n for n, _ in held])

    def keep(self, reader: str, sample: int, words: Sequence[str], found: Sample) -> None:
        now = time.monotonic()
        at = time.monotonic_ns()  # which count each word's figure comes from
        items: list[tuple[_Key, tuple[int, ...]]] = [
            (("s", reader, sample, ""), (found.total, found.oldest, found.newest, at))
        ]
        items += [
            (("w", reader, sample, w), (n, at)) for w, n in zip(words, found.held, strict=True)
        ]
        with self._lock:
            for key, value in items:
                self._entries[key] = (value, now + self._ttl)
                self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
