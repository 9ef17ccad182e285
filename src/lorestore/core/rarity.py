"""Word rarity for PostgreSQL's full-text scores. ``ts_rank_cd`` weighs where and how often a
lesson holds the words, never how rare a word is, so a lesson matching one common word of a
task ranked beside one matching its rare, telling word (SQLite's BM25 counts rarity itself).
The rarity here is counted among the hits one search or recall already read: bounded by its
limit, it does not grow with the store (the earlier attempt counted every matching lesson
and every lesson of the owner, and was taken out for its cost; docs/evals.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def rarity_scores(
    term_ranks: Sequence[Sequence[float]], keys: Sequence[str] | None = None
) -> list[float]:
    """Each hit's score from its per-word ranks (``term_ranks[i][t]``: hit i's ``ts_rank_cd``
    for word t alone, 0 when it does not hold the word): the sum over the words of the rank
    times the word's rarity among these hits, ``ln((hits + 1) / hits holding it)``. A word
    every hit holds still counts a little, so a task whose words all match alike keeps the
    order of the ranks. With ``keys`` (hit i's lesson key), hits are counted by key: the
    same key at several rungs of a ladder is one piece of knowledge, and its copies do not
    make its words look common."""
    if not term_ranks:
        return []
    group = list(keys) if keys is not None else list(range(len(term_ranks)))
    width = max(len(ranks) for ranks in term_ranks)
    holders: list[set[object]] = [set() for _ in range(width)]
    for g, ranks in zip(group, term_ranks, strict=True):
        for t, rank in enumerate(ranks):
            if rank > 0:
                holders[t].add(g)
    hits = len(set(group))
    weight = [math.log((hits + 1) / len(h)) if h else 0.0 for h in holders]
    return [sum(r * w for r, w in zip(ranks, weight, strict=False)) for ranks in term_ranks]
