"""Word rarity and saturation for PostgreSQL's full-text scores, as SQLite's BM25 has them.

``ts_rank_cd`` weighs where and how often a lesson holds the words, never how rare a word is,
so a lesson matching one common word of a task ranked beside one matching its rare, telling
word. The rarity here is counted among the hits one search or recall already read: bounded by
its limit, it does not grow with the store (the earlier attempt counted every matching lesson
and every lesson of the owner, and was taken out for its cost; docs/evals.md).

Nor does ``ts_rank_cd`` tire of a word: its rank grows with every occurrence, so a lesson
saying one word of the task six times outranked one holding two of its words once. Each
word's rank is saturated as BM25 saturates a term's frequency, ``r (k1 + 1) / (r + k1)``, with
SQLite's (FTS5's) k1 of 1.2 occurrences in the text, which ``ts_rank_cd`` weighs 0.2 each."""

from __future__ import annotations

import math
from collections.abc import Sequence

TEXT_OCCURRENCE = 0.2  # ts_rank_cd's default weight of label C, a lesson's text (migration 0012)
K1 = 1.2 * TEXT_OCCURRENCE  # FTS5's bm25 k1, in ts_rank_cd's units


def rarity_scores(
    term_ranks: Sequence[Sequence[float]], keys: Sequence[str] | None = None
) -> list[float]:
    """Each hit's score from its per-word ranks (``term_ranks[i][t]``: hit i's ``ts_rank_cd``
    for word t alone, 0 when it does not hold the word): the sum over the words of the rank,
    saturated, times the word's rarity among these hits, ``ln((hits + 1) / hits holding
    it)``. A word every hit holds still counts a little, so a task whose words all match
    alike keeps the order of the ranks. With ``keys`` (hit i's lesson key), hits are counted
    by key: the same key at several rungs of a ladder is one piece of knowledge, and its
    copies do not make its words look common."""
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
    return [
        sum(saturated(r) * w for r, w in zip(ranks, weight, strict=False)) for ranks in term_ranks
    ]


def saturated(rank: float) -> float:
    """A word's ``ts_rank_cd`` with BM25's saturation: it grows with the rank (one word keeps
    its order), each further occurrence adding less, and never reaches ``K1 + 1``."""
    return rank * (K1 + 1) / (rank + K1)
