"""Recall's candidates and search's hits, lexical or hybrid: the store's full-text pass (and
recall's newest per rung), then (with the extra ``lorestore[semantic]``) its semantic pass
over the same (owner, scope) pairs, whose new lessons join the others and whose similarities
are fused with the full-text scores by core/fusion.py. Every recall candidate then goes
through the same eligibility, shadowing and budget (core/recall.py), and every search hit
meets search's own conditions (active, not rejected, unexpired, the tags asked for),
whichever pass found it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from lorestore.core.fusion import fuse, related
from lorestore.semantic.model import availability
from lorestore.storage.protocol import RecallRow, SearchHit, Transaction

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
    known = {row.head.id for row in rows}
    found, similarity = tx.semantic_candidates(
        addresses, task, known=known, limit=SEMANTIC_CANDIDATES
    )
    model = tx.retrieval_model()  # after the pass: a model that failed to load says so
    if model is None:
        return rows, f"lexical: {_why_lexical(tx)}"
    if not similarity:
        return rows, f"hybrid:{model}"
    rows = [*rows, *(row for row in found if related(similarity[row.head.id]))]
    relevance = fuse({row.head.id: row.score for row in rows}, similarity)
    return [row._replace(score=relevance[row.head.id]) for row in rows], f"hybrid:{model}"


def _why_lexical(tx: Transaction) -> str:
    return (
        tx.retrieval_problem() or availability().reason or "switched off (LORESTORE_SEMANTIC=off)"
    )


def hybrid_hits(
    tx: Transaction,
    addresses: Sequence[tuple[str, str]],
    query: str,
    hits: list[SearchHit],
    *,
    tags: Sequence[str],
    now: str,
    limit: int,
) -> list[SearchHit]:
    """Search's full-text ``hits`` with, when the extra is on, the lessons of the searched
    scopes nearest the query that the words missed (under search's conditions), all ordered
    by the fused relevance, which becomes each hit's score; at most ``limit``. Unchanged
    without the extra."""
    if tx.retrieval_model() is None:
        return hits
    known = {hit.lesson.id for hit in hits}
    found, similarity = tx.semantic_candidates(addresses, query, known=known, limit=limit)
    if not similarity:
        return hits
    wanted = set(tags)
    merged = list(hits)
    for row in found:
        if not related(similarity[row.head.id]):
            continue
        if row.head.expires_at is not None and row.head.expires_at <= now:
            continue
        lesson = row.record()
        if wanted <= set(lesson.tags):
            merged.append(SearchHit(lesson, 0.0, _snippet(lesson.value), row.value_digest))
    relevance = fuse({hit.lesson.id: hit.score for hit in merged}, similarity)
    merged.sort(key=lambda hit: -relevance[hit.lesson.id])  # stable: ties keep their order
    return [replace(hit, score=relevance[hit.lesson.id]) for hit in merged[:limit]]


def _snippet(value: str, words: int = 16) -> str:
    """A hit found by meaning has no matched word to mark: its opening words."""
    parts = value.split()
    return " ".join(parts[:words]) + ("…" if len(parts) > words else "")
