"""POST /webhooks/github through the real application on both backends: signed deliveries built
from GitHub's payloads, each admitted or ignored event, the signature refusals, replays, the
lesson a comment becomes, edits, resolved threads, tombstones, an unbound repository; the store's
state afterwards read back through the service's own operations (REST)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tests import github
from tests.conftest import dump_text
from tests.ingest.conftest import Hook

from lorestore.core.timestamps import format_ts

GOOD = "Don't mock the clock here: use the frozen_clock fixture from conftest instead."


def test_a_review_comment_becomes_a_candidate_lesson_with_its_provenance(hook: Hook) -> None:
    comment = github.review_comment(501, GOOD, author="Rev", association="MEMBER", line=21)
    answer = hook.post("pull_request_review_comment", github.review_comment_event(comment))
    assert answer.status_code == 200, answer.text
    assert answer.json()["outcome"] == "created"
    read = hook.api.ok(
        "memory_read", {"scope": "repo::acme/app", "key": "github-review-comment-501"}
    )
    lesson = read["lesson"]
    assert lesson["owner"] == {"user": "local"}
    assert lesson["trust"] == "candidate"
    assert lesson["value"].startswith("Review comment on tests/test_clock.py line 21 (PR #7):")
    assert lesson["value"].endswith(GOOD)
    assert lesson["source"] | {"session": None} == {
        "agent": "github",
        "trigger": "pull_request_review_comment",
        "session": None,
        "author": "Rev",
        "author_association": "MEMBER",
        "url": "https://github.com/acme/app/pull/7#discussion_r501",
        "repo": "acme/app",
        "branch": "feature/clock",
        "commit": github.HEAD_SHA,
        "pr": 7,
    }
    assert lesson["expires_at"] == format_ts(hook.clock.now + timedelta(days=90))
    assert hook.stats() == {"created": 1}


def test_a_comment_on_a_file_only_the_branch_has_is_a_branch_lesson(hook: Hook) -> None:
    comment = github.review_comment(502, GOOD, path="tests/test_new.py", hunk=github.NEW_FILE_HUNK)
    assert (
        hook.post("pull_request_review_comment", github.review_comment_event(comment)).json()[
            "outcome"
        ]
        == "created"
    )
    assert hook.lessons() == []  # not at the repository's scope
    [lesson] = hook.lessons("branch::acme/app::feature/clock")
    assert lesson["key"] == "github-review-comment-502"


def test_a_review_with_a_body_and_a_comment_on_a_pull_request_are_admitted(hook: Hook) -> None:
    review = hook.post("pull_request_review", github.review_event(61, GOOD + " (review)"))
    pr_comment = hook.post("issue_comment", github.issue_comment_event(71, GOOD + " (thread)"))
    assert (review.status_code, pr_comment.status_code) == (200, 200)
    keys = sorted(lesson["key"] for lesson in hook.lessons())
    assert keys == ["github-pr-comment-71", "github-review-61"]
    assert hook.stats() == {"created": 2}


@pytest.mark.parametrize(
    ("event", "payload", "reason"),
    [
        ("pull_request_review", github.review_event(62, None), "review_without_body"),
        ("pull_request_review", github.review_event(63, "  "), "review_without_body"),
        (
            "issue_comment",
            github.issue_comment_event(72, GOOD, on_pull_request=False),
            "issue_not_pull_request",
        ),
        (
            "issue_comment",
            github.issue_comment_event(73, GOOD, action="edited"),
            "event:issue_comment.edited",
        ),
        (
            "pull_request_review_comment",
            github.review_comment_event(github.review_comment(503, GOOD), action="deleted"),
            "event:pull_request_review_comment.deleted",
        ),
        (
            "pull_request_review_thread",
            github.thread_event([github.review_comment(504, GOOD)], action="unresolved"),
            "event:pull_request_review_thread.unresolved",
        ),
        ("push", {"ref": "refs/heads/main", "repository": github.repository()}, "event:push"),
        (
            "pull_request",
            {
                "action": "opened",
                "pull_request": github.pull_request(),
                "repository": github.repository(),
            },
            "event:pull_request.opened",
        ),
    ],
)
def test_every_other_event_is_202_and_ignored(
    hook: Hook, event: str, payload: dict[str, object], reason: str
) -> None:
    before = dump_text(hook.api.service.store)
    answer = hook.post(event, payload)
    assert answer.status_code == 202, answer.text
    assert answer.json()["outcome"] == reason
    assert hook.lessons() == []
    assert hook.stats() == {reason: 1}
    assert dump_text(hook.api.service.store) != before  # the delivery and its count, no lesson


def test_ping_answers_200_and_stores_no_lesson(hook: Hook) -> None:
    answer = hook.post("ping", github.ping_event())
    assert (answer.status_code, answer.json()["outcome"]) == (200, "ping")
    assert hook.lessons() == [] and hook.stats() == {"ping": 1}


@pytest.mark.parametrize("signature", [None, "sha256=" + "0" * 64, "sha1=abc", "garbage"])
def test_a_missing_or_wrong_signature_is_401_and_changes_nothing(
    hook: Hook, signature: str | None
) -> None:
    payload = github.review_comment_event(github.review_comment(505, GOOD))
    body = github.body_of(payload)
    sent = github.headers("pull_request_review_comment", body, None)
    if signature is not None:
        sent["X-Hub-Signature-256"] = signature
    before = dump_text(hook.api.service.store)
    answer = hook.api.client.post("/webhooks/github", content=body, headers=sent)
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "unauthenticated"
    assert dump_text(hook.api.service.store) == before
    # Signed with another secret: refused the same way.
    other = hook.post("pull_request_review_comment", payload, secret="not-the-secret")
    assert other.status_code == 401
    assert dump_text(hook.api.service.store) == before
    # The control: the same body signed with the webhook's secret lands.
    assert hook.post("pull_request_review_comment", payload).status_code == 200
    assert [lesson["key"] for lesson in hook.lessons()] == ["github-review-comment-505"]


def test_the_signature_covers_the_raw_body(hook: Hook) -> None:
    payload = github.review_comment_event(github.review_comment(506, GOOD))
    body = github.body_of(payload)
    sent = github.headers("pull_request_review_comment", body, hook.secret)
    tampered = body.replace(b"frozen_clock", b"mock_clock__")
    answer = hook.api.client.post("/webhooks/github", content=tampered, headers=sent)
    assert answer.status_code == 401
    assert hook.lessons() == []


def test_a_replay_changes_nothing_and_answers_200(hook: Hook) -> None:
    payload = github.review_comment_event(github.review_comment(507, GOOD))
    first = hook.post("pull_request_review_comment", payload, delivery="d-507")
    assert first.json()["outcome"] == "created"
    before = dump_text(hook.api.service.store)
    again = hook.post("pull_request_review_comment", payload, delivery="d-507")
    assert (again.status_code, again.json()["outcome"]) == (200, "replay")
    assert dump_text(hook.api.service.store) == before
    # The control: another delivery of the same comment is applied (a sighting, no new lesson).
    other = hook.post("pull_request_review_comment", payload, delivery="d-507-b")
    assert other.json()["outcome"] == "seen"


def test_an_edited_comment_makes_a_new_version(hook: Hook) -> None:
    comment = github.review_comment(508, GOOD)
    hook.post("pull_request_review_comment", github.review_comment_event(comment))
    edited = {**comment, "body": GOOD + " It also resets between tests."}
    answer = hook.post("pull_request_review_comment", github.review_comment_event(edited, "edited"))
    assert answer.json()["outcome"] == "updated"
    address = {"scope": "repo::acme/app", "key": "github-review-comment-508"}
    history = hook.api.ok("memory_history", address)["versions"]
    assert [v["version"] for v in history] == [1, 2]
    assert history[0]["value"].endswith(GOOD)
    assert history[1]["value"].endswith("It also resets between tests.")


def test_a_resolved_thread_raises_the_seen_count_as_the_pr_authors_sighting(hook: Hook) -> None:
    comment = github.review_comment(509, GOOD, author="rev")
    hook.post("pull_request_review_comment", github.review_comment_event(comment))
    address = {"scope": "repo::acme/app", "key": "github-review-comment-509"}
    assert hook.api.ok("memory_read", address)["lesson"]["seen_count"] == 1
    resolved = hook.post("pull_request_review_thread", github.thread_event([comment]))
    assert resolved.status_code == 200, resolved.text
    assert resolved.json() | {"delivery": ""} == {
        "delivery": "",
        "outcome": "resolved",
        "lessons": ["github-review-comment-509"],
    }
    assert hook.api.ok("memory_read", address)["lesson"]["seen_count"] == 2
    # Resolved again (a new delivery): the PR author's session has counted already.
    hook.post("pull_request_review_thread", github.thread_event([comment]))
    assert hook.api.ok("memory_read", address)["lesson"]["seen_count"] == 2


def test_a_comment_repeating_a_rejected_lesson_is_dropped_and_counted(hook: Hook) -> None:
    # A lesson a person rejected (written by an agent), and a reviewer saying it again.
    address = {"scope": "repo::acme/app", "key": "clock"}
    hook.api.ok("memory_write", {**address, "value": GOOD})
    hook.api.ok("memory_reject", {**address, "reason": "we mock the clock on purpose"})
    before = dump_text(hook.api.service.store)
    again = github.review_comment(511, GOOD.upper(), path="src/other.py", line=3)
    answer = hook.post("pull_request_review_comment", github.review_comment_event(again))
    assert (answer.status_code, answer.json()["outcome"]) == (202, "tombstoned")
    assert hook.lessons() == []
    read = hook.api.post(
        "memory_read", {"scope": "repo::acme/app", "key": "github-review-comment-511"}
    )
    assert read.status_code == 404
    assert hook.stats() == {"tombstoned": 1}
    assert "github-review-comment-511" not in dump_text(hook.api.service.store)
    assert len(dump_text(hook.api.service.store)) > len(before)  # the delivery and its count
    # A captured lesson rejected, and its comment delivered again (edited back to it).
    captured = github.review_comment(512, "Prefer tmp_path over tempfile in these tests.")
    hook.post("pull_request_review_comment", github.review_comment_event(captured))
    rejected = {"scope": "repo::acme/app", "key": "github-review-comment-512"}
    hook.api.ok("memory_reject", {**rejected, "reason": "tempfile is fine here"})
    edited = hook.post(
        "pull_request_review_comment", github.review_comment_event(captured, "edited")
    )
    assert edited.json()["outcome"] == "tombstoned"
    assert hook.stats() == {"tombstoned": 2, "created": 1}
    # The control: a different comment from the same reviewer still lands.
    fresh = github.review_comment(513, "Name the fixture after what it freezes, not how.")
    landed = hook.post("pull_request_review_comment", github.review_comment_event(fresh))
    assert landed.json()["outcome"] == "created"


def test_an_unbound_repository_is_404_and_logged(
    hook: Hook, caplog: pytest.LogCaptureFixture
) -> None:
    payload = github.review_comment_event(
        github.review_comment(514, GOOD, repo="acme/other"), repo="acme/other"
    )
    before = [lesson["key"] for lesson in hook.lessons("repo::acme/other")]
    with caplog.at_level("WARNING", logger="lorestore.webhook"):
        answer = hook.post("pull_request_review_comment", payload)
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "not_found"
    assert "acme/other" in caplog.text
    assert hook.lessons("repo::acme/other") == before == []
    assert hook.stats() == {"unbound_repository": 1}
    # The control: bound to the account acme, every repository of it lands (the account's
    # webhook signs with its own secret).
    from lorestore.auth.actor import local_actor
    from lorestore.ingest.models import WebhookTargetParams

    account = hook.api.service.webhook_add(
        local_actor(), WebhookTargetParams.model_validate({"target": "acme"})
    )
    landed = hook.post("pull_request_review_comment", payload, secret=account.secret)
    assert landed.status_code == 200, landed.text
    assert [lesson["key"] for lesson in hook.lessons("repo::acme/other")] == [
        "github-review-comment-514"
    ]


def test_a_comment_kept_only_once_edited_is_a_new_lesson_with_its_expiry(hook: Hook) -> None:
    comment = github.review_comment(515, "nit: clock")
    first = hook.post("pull_request_review_comment", github.review_comment_event(comment))
    assert first.json()["outcome"] == "too_short"
    edited = {**comment, "body": GOOD}
    answer = hook.post("pull_request_review_comment", github.review_comment_event(edited, "edited"))
    assert answer.json()["outcome"] == "created"
    address = {"scope": "repo::acme/app", "key": "github-review-comment-515"}
    lesson = hook.api.ok("memory_read", address)["lesson"]
    assert lesson["expires_at"] == format_ts(hook.clock.now + timedelta(days=90))
    # An edit of a kept comment keeps the expiry it has, while the clock moves on.
    hook.clock.advance(days=3)
    again = {**comment, "body": GOOD + " Really."}
    hook.post("pull_request_review_comment", github.review_comment_event(again, "edited"))
    assert hook.api.ok("memory_read", address)["lesson"]["expires_at"] == lesson["expires_at"]


@pytest.mark.parametrize("header", ["X-GitHub-Delivery", "X-GitHub-Event"])
def test_a_signed_delivery_without_its_headers_is_400_and_changes_nothing(
    hook: Hook, header: str
) -> None:
    body = github.body_of(github.review_comment_event(github.review_comment(516, GOOD)))
    sent = github.headers("pull_request_review_comment", body, hook.secret)
    del sent[header]
    before = dump_text(hook.api.service.store)
    answer = hook.api.client.post("/webhooks/github", content=body, headers=sent)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "invalid_argument"
    assert dump_text(hook.api.service.store) == before


def test_a_signed_body_that_is_not_json_is_400(hook: Hook) -> None:
    body = b"payload=%7B%7D"  # the form encoding GitHub offers beside JSON
    sent = github.headers("ping", body, hook.secret)
    answer = hook.api.client.post("/webhooks/github", content=body, headers=sent)
    assert answer.status_code == 400
    assert "application/json" in answer.json()["error"]["hint"]
