"""The outside-author rule where eligibility lives (core/recall.py): a lesson whose GitHub author
association is not OWNER, MEMBER or COLLABORATOR is held until verified, and no longer stands
at its address (it cannot shadow the same key further up the ladder)."""

from __future__ import annotations

import pytest

from lorestore.core.recall import (
    Candidate,
    LessonHead,
    ScopePolicy,
    hold_reasons,
    outside_unverified,
)


def _candidate(trust: str, association: str | None) -> Candidate:
    head = LessonHead(
        "id", "repo::acme/app", "k", "text", trust, 1, 1, "t", "t", association=association
    )
    return Candidate(head, "digest", 0, 0.0, ScopePolicy())


@pytest.mark.parametrize(
    "association", ["CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "NONE", "mannequin"]
)
@pytest.mark.parametrize("trust", ["candidate", "corroborated"])
def test_an_outside_authors_unverified_lesson_is_held(association: str, trust: str) -> None:
    reasons = hold_reasons(_candidate(trust, association), now="t", revision=None, blobs={})
    assert reasons == ["outside_author"]
    assert outside_unverified(trust, association)


@pytest.mark.parametrize(
    ("trust", "association"),
    [
        ("verified", "CONTRIBUTOR"),  # a person verified it
        ("candidate", "MEMBER"),
        ("candidate", "owner"),
        ("corroborated", "COLLABORATOR"),
        ("candidate", None),  # not a GitHub capture
    ],
)
def test_the_controls_are_not_held(trust: str, association: str | None) -> None:
    assert hold_reasons(_candidate(trust, association), now="t", revision=None, blobs={}) == []
    assert not outside_unverified(trust, association)
