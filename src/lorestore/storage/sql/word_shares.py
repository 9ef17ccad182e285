"""How many of the newest lessons hold a word, kept between reads (LessonPrimitives._word_classes).

Counting them reads the newest lessons a reader may see: 5-6 ms of every search and recall on
PostgreSQL at 100k lessons, for an answer that moves only as lessons are written. A store
keeps one ``WordShares``; an entry holds until a write commits through that store (its
generation moves: this process then counts afresh, exactly as without the cache) or for
``TTL`` seconds, the most another process's writes stay unseen. A stale entry only moves the
window a frequent word is ranked in; no match is lost by it (docs/search.md)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence

TTL = 60.0  # seconds
SIZE = 4096  # entries: words and window starts, each per reader

# (what, reader, sample size or window position, word): "w" a word's holders, "k" a window
_Key = tuple[str, str, int, str]


class WordShares:
    """Per reader (whose lessons the count covers: the actor on PostgreSQL, under its
    row-level security; the whole store on SQLite) and sample size: each word's holders among
    the newest sampled lessons, how many were sampled, and the row key a window of the newest
    lessons starts at. Safe across a server's worker threads."""

    def __init__(self, ttl: float = TTL, size: int = SIZE) -> None:
        self._ttl = ttl
        self._size = size
        self._lock = threading.Lock()
        self._entries: OrderedDict[_Key, tuple[int, int, float]] = OrderedDict()
        self.generation = 0

    def wrote(self) -> None:
        """A write committed through the store: every entry is stale."""
        with self._lock:
            self.generation += 1
            self._entries.clear()

    def shares(
        self, reader: str, sample: int, words: Sequence[str]
    ) -> tuple[int, list[int]] | None:
        """(sampled, holders of each word), or None unless every word is known and fresh."""
        keys: list[_Key] = [("w", reader, sample, word) for word in words]
        found = self._get(keys)
        if found is None:
            return None
        totals = {total for total, _ in found}
        if len(totals) != 1:  # counted at different times: count again
            return None
        return totals.pop(), [held for _, held in found]

    def keep_shares(
        self,
        reader: str,
        sample: int,
        words: Sequence[str],
        total: int,
        held: Sequence[int],
        generation: int,
    ) -> None:
        self._put(
            [(("w", reader, sample, w), (total, n)) for w, n in zip(words, held, strict=True)],
            generation,
        )

    def window(self, reader: str, position: int) -> int | None:
        """The row key of the lesson at ``position`` among the newest ``reader`` may see, as
        kept (0: none that far back)."""
        found = self._get([("k", reader, position, "")])
        return None if found is None else found[0][0]

    def keep_window(self, reader: str, position: int, pk: int, generation: int) -> None:
        self._put([(("k", reader, position, ""), (pk, 0))], generation)

    def _get(self, keys: list[_Key]) -> list[tuple[int, int]] | None:
        now = time.monotonic()
        values = []
        with self._lock:
            for key in keys:
                entry = self._entries.get(key)
                if entry is None or entry[2] <= now:
                    return None
                self._entries.move_to_end(key)
                values.append((entry[0], entry[1]))
        return values

    def _put(self, items: list[tuple[_Key, tuple[int, int]]], generation: int) -> None:
        """Kept only if no write committed since the count began (``generation``, read
        before it)."""
        expires = time.monotonic() + self._ttl
        with self._lock:
            if generation != self.generation:
                return
            for key, (a, b) in items:
                self._entries[key] = (a, b, expires)
                self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
