"""Recall's candidates, lexical or hybrid: the store's full-text and newest-per-rung pass,
then (with the extra ``lorestore[semantic]``) its semantic pass over the same rungs, whose
new candidates join the others and whose similarities are fused with the full-text scores by
core/fusion.py. Every candidate then goes through the same eligibility, shadowing and budget
(core/recall.py), whichever pass found it."""

from __future__ import annotations

from collections.abc import Sequence

from lorestore.core.fusion import fuse
from lorestore.semantic.model import availability
from lorestore.storage.protocol import RecallRow, Transaction

# The semantic pass's new candidates per recall, over all rungs together (the full-text pass
# takes 25 a rung): the nearest lessons, the most of which the words already found.
SEMANTIC_CANDIDATES = 25


def hybrid_candidates(
    tx: Transaction,
    addresses: Sequence[tuple[str, str]],
    terms: Sequence[str] | None,
    task: str | None,
    *,
    limit: int,
) -> tuple[list[RecallRow], str]:
    """The candidates with their relevance, and how they were retrieved, as recall's context
    says: ``hybrid:<model>`` or ``lexical: <why>``."""
    rows = tx.recall_candidates(addresses, terms, limit=limit)
    model = tx.retrieval_model()
    if model is None:
        return rows, f"lexical: {availability().reason or 'switched off (LORESTORE_SEMANTIC=off)'}"
    known = {row.head.id for row in rows}
    found, similarity = tx.semantic_candidates(
        addresses, task, known=known, limit=SEMANTIC_CANDIDATES
    )
    if not similarity:
        return rows, f"hybrid:{model}"
    rows = [*rows, *found]
    relevance = fuse({row.head.id: row.score for row in rows}, similarity)
    return [row._replace(score=relevance[row.head.id]) for row in rows], f"hybrid:{model}"
