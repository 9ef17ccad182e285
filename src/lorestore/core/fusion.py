"""Hybrid retrieval's one fusion rule: a candidate's relevance to the task from its full-text
score and its embedding's cosine similarity to the task's. Pure; the scores come from the
store (FTS5 BM25 or ts_rank_cd, higher is better) and the vector index."""

from __future__ import annotations

from collections.abc import Mapping

# A weighted sum of the two signals, each on [0, 1] and each relative to the best candidate of
# this recall or search: the full-text score over the best score, and the similarity above a
# floor over the best similarity above it. Relative both, so that neither signal's spread
# decides the outcome: this model's best cosine for a task is far below 1 (0.34-0.75 over the
# tasks of evals/, median 0.57) and varies from task to task, so measured against a fixed 1.0
# the meaning moved the order less than the words did, and less for some tasks than others
# (docs/evals.md, "Both signals relative to the best"). Below the floor a lesson is unrelated
# to the task (this model gives unrelated short texts about 0.0-0.15, paraphrases with no word
# in common 0.25 and more), so it adds nothing and a lesson no word and no meaning match keeps
# relevance 0: offered after the matches, as without a task. Weights and floor were chosen on
# evals/ (docs/evals.md; never tuned on a single case): equal weights. With both signals
# relative, more weight on the meaning (0.4/0.6) raised recall MRR by 0.008-0.012, most of it
# in the far paraphrases, and made more queries worse (7 against 3 on SQLite).
LEXICAL_WEIGHT = 0.5
SEMANTIC_WEIGHT = 0.5
SIMILARITY_FLOOR = 0.15


def fuse(lexical: Mapping[str, float], similarity: Mapping[str, float]) -> dict[str, float]:
    """The relevance of each candidate of ``lexical`` (id -> full-text score, 0 when no word
    matched) given ``similarity`` (id -> cosine, for the candidates that have a vector):
    ``LEXICAL_WEIGHT * score / best score + SEMANTIC_WEIGHT * (cosine - floor) / (best cosine
    - floor)``, each term 0 when below its floor. Only the order matters to recall (it ranks
    by relevance relative to the best), so the scale is free."""
    best = max((s for s in lexical.values() if s > 0), default=0.0)
    nearest = max((similarity.get(lesson_id, 0.0) for lesson_id in lexical), default=0.0)
    span = nearest - SIMILARITY_FLOOR  # the best candidate's similarity above the floor
    fused: dict[str, float] = {}
    for lesson_id, score in lexical.items():
        words = score / best if best > 0 and score > 0 else 0.0
        above = similarity.get(lesson_id, 0.0) - SIMILARITY_FLOOR
        meaning = above / span if span > 0 and above > 0 else 0.0
        fused[lesson_id] = LEXICAL_WEIGHT * words + SEMANTIC_WEIGHT * meaning
    return fused


def related(similarity: float) -> bool:
    """Whether a lesson the words did not find is near enough the task to be weighed at all
    (above the floor): the semantic pass adds no lesson that would have relevance 0."""
    return similarity > SIMILARITY_FLOOR
