"""Recall's ranking (core/recall.py): relevance to the task decides, scope specificity and
trust are a bounded boost on it, not a wall; without a task the precedence order stands."""

from __future__ import annotations

from lorestore.core.recall import (
    SPECIFICITY_BOOST,
    TRUST_BOOST,
    Candidate,
    LessonHead,
    ScopePolicy,
    precedence,
    rank,
)

RUNGS = ["branch::acme/app::main", "repo::acme/app", "project::billing", "global"]


def candidate(key: str, rung: int, relevance: float, trust: str = "candidate") -> Candidate:
    head = LessonHead(
        id=key,
        scope=RUNGS[rung],
        key=key,
        value=f"the {key} lesson",
        trust=trust,
        version=1,
        seen_count=1,
        recorded_at="2026-01-01T00:00:00.000000Z",
        updated_at="2026-01-01T00:00:00.000000Z",
    )
    return Candidate(head, f"digest-{key}", rung, relevance, ScopePolicy())


def keys(cands: list[Candidate]) -> list[str]:
    return [c.lesson.key for c in cands]


def test_a_strong_global_match_comes_before_a_weak_branch_one() -> None:
    weak_branch = candidate("weak-branch", 0, 2.0)
    strong_global = candidate("strong-global", 3, 5.0)
    assert keys(rank(precedence([weak_branch, strong_global]))) == ["strong-global", "weak-branch"]


def test_specificity_and_trust_break_near_ties_within_their_bound() -> None:
    branch = candidate("branch", 0, 4.0)
    glob = candidate("global", 3, 4.2)  # 5% better text match: the branch lesson's boost wins
    assert keys(rank(precedence([glob, branch]))) == ["branch", "global"]
    verified = candidate("verified", 3, 4.0, trust="verified")
    plain = candidate("plain", 3, 4.1)
    assert keys(rank(precedence([plain, verified]))) == ["verified", "plain"]
    # The bound: the largest boost is an eighth; a match a third better wins over it.
    top = max(SPECIFICITY_BOOST.values()) + max(TRUST_BOOST.values())
    assert top <= 0.125
    boosted = candidate("boosted", 0, 3.0, trust="verified")
    better = candidate("better", 3, 4.0)
    assert keys(rank(precedence([boosted, better]))) == ["better", "boosted"]


def test_without_a_task_the_order_is_the_precedence_order() -> None:
    cands = [candidate("g", 3, 0.0), candidate("b", 0, 0.0, trust="verified"), candidate("r", 1, 0)]
    assert keys(rank(precedence(cands))) == ["b", "r", "g"]


def test_matching_lessons_come_before_the_rest() -> None:
    unmatched_branch = candidate("unmatched", 0, 0.0, trust="verified")
    matched_global = candidate("matched", 3, 0.5)
    assert keys(rank(precedence([unmatched_branch, matched_global]))) == ["matched", "unmatched"]
