"""Word rarity for PostgreSQL's full-text scores. ``ts_rank_cd`` weighs where and how often a
lesson holds the words, never how rare a word is, so a lesson matching one common word of a
task ranked beside one matching its rare, telling word (SQLite's BM25 counts rarity itself).
The rarity here is counted among the hits one search or recall already read: bounded by its
limit, it does not grow with the store (the earlier attempt counted every matching lesson
and every lesson of the owner, and was taken out for its cost; docs/evals.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def rarity_scores(term_ranks: Sequence[Sequence[float]]) -> list[float]:
    """Each hit's score from its per-word ranks (``term_ranks[i][t]``: hit i's ``ts_rank_cd``
    for word t alone, 0 when it does not hold the word): the sum over the words of the rank
    times the word's rarity among these hits, ``ln((hits + 1) / hits holding it)``. A word
    every hit holds still counts a little, so a task whose words all match alike keeps the
    order of the ranks."""
    hits = len(term_ranks)
    if not hits:
        return []
    width = max(len(ranks) for ranks in term_ranks)
    holding = [
        sum(1 for ranks in term_ranks if t < len(ranks) and ranks[t] > 0) for t in range(width)
    ]
    weight = [math.log((hits + 1) / n) if n else 0.0 for n in holding]
    return [sum(r * w for r, w in zip(ranks, weight, strict=False)) for ranks in term_ranks]
