"""An outside author's comment (author association other than owner, member or collaborator) is
captured as a candidate, sits in the review queue, and reaches no task through recall or search
until a person verifies it (a person's search shows it, labelled with the hold); a member's
comment in the same calls is the control. Through the
real REST handlers on both backends."""

from __future__ import annotations

from typing import Any

import pytest
from tests import github
from tests.ingest.conftest import Hook

OUTSIDE = "Freeze time with the frozen_clock fixture; a mocked clock hides the retry bug."
INSIDE = "Freeze the database with the pg_snapshot fixture; a mocked clock hides nothing else."


def _recall(hook: Hook) -> dict[str, Any]:
    recall: dict[str, Any] = hook.api.ok(
        "memory_recall", {"repo": "acme/app", "task": "fix the flaky clock test"}
    )
    return recall


def _offered(recall: dict[str, Any]) -> set[str]:
    return {o["lesson"]["key"] for o in recall["offered"]}


def _held(recall: dict[str, Any]) -> dict[str, list[str]]:
    return {h["key"]: h["reasons"] for h in recall["held"]}


SEARCH = {"query": "frozen clock fixture", "scopes": ["repo::acme/app"]}


def _searched(hook: Hook) -> set[str]:
    """What an agent's search (a write token) is served: recall's rules apply to it."""
    agent = hook.api.mint(name="agent", permission="write")
    return {h["lesson"]["key"] for h in hook.api.ok("memory_search", SEARCH, token=agent)["hits"]}


def _labelled(hook: Hook) -> dict[str, list[str]]:
    """A person's search (the admin token) shows every hit, each with what would hold it."""
    return {h["lesson"]["key"]: h["held"] for h in hook.api.ok("memory_search", SEARCH)["hits"]}


@pytest.mark.parametrize("association", ["CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "NONE"])
def test_an_outside_author_is_held_until_a_person_verifies(hook: Hook, association: str) -> None:
    outside = github.review_comment(700, OUTSIDE, author="drive-by", association=association)
    inside = github.review_comment(701, INSIDE, author="maintainer", association="COLLABORATOR")
    for comment in (outside, inside):
        answer = hook.post("pull_request_review_comment", github.review_comment_event(comment))
        assert answer.json()["outcome"] == "created"
    out_key, in_key = "github-review-comment-700", "github-review-comment-701"

    stored = hook.api.ok("memory_read", {"scope": "repo::acme/app", "key": out_key})["lesson"]
    assert stored["trust"] == "candidate"
    assert stored["source"]["author_association"] == association
    queue = hook.api.ok("memory_review_queue", {})["items"]
    assert [(i["reason"], i["lesson"]["key"]) for i in queue] == [("outside_author", out_key)]

    recall = _recall(hook)
    assert in_key in _offered(recall)  # the control: the member's lesson reaches the task
    assert out_key not in _offered(recall)
    assert "outside_author" in _held(recall)[out_key]
    assert out_key not in recall["text"] and OUTSIDE not in recall["text"]
    assert _searched(hook) == {in_key}
    assert _labelled(hook) == {in_key: [], out_key: ["outside_author"]}

    hook.api.ok("memory_verify", {"scope": "repo::acme/app", "key": out_key, "note": "checked"})
    recall = _recall(hook)
    assert {in_key, out_key} <= _offered(recall)
    assert out_key not in _held(recall)
    assert _searched(hook) == {in_key, out_key}
    assert _labelled(hook) == {in_key: [], out_key: []}
    assert hook.api.ok("memory_review_queue", {})["items"] == []


def test_the_webhook_cannot_verify_and_a_sighting_does_not_release(hook: Hook) -> None:
    """Corroboration (three sessions) is not a person's verification: still held."""
    comment = github.review_comment(702, OUTSIDE, author="drive-by", association="NONE")
    hook.post("pull_request_review_comment", github.review_comment_event(comment))
    key = "github-review-comment-702"
    for agent in ("a", "b", "c"):
        token = hook.api.mint(name=agent, permission="write")
        hook.api.ok(
            "memory_write",
            {
                "scope": "repo::acme/app",
                "key": key,
                "value": hook.api.ok("memory_read", {"scope": "repo::acme/app", "key": key})[
                    "lesson"
                ]["value"],
            },
            token=token,
        )
    lesson = hook.api.ok("memory_read", {"scope": "repo::acme/app", "key": key})["lesson"]
    assert lesson["trust"] == "corroborated"
    assert "outside_author" in _held(_recall(hook))[key]
    assert key not in _searched(hook)
