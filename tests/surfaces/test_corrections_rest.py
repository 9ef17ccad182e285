"""Corrections through the REST handler (the real Starlette app in process): an agent's write
token cannot verify or reject while a reviewer's can; a rejected value is absent from read,
list and search and cannot be re-asserted, each beside a positive control."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.serving import Api, error_of, make_api

S = "repo::acme/app"
WRONG = "Disable the flaky payment test when CI is red"
RIGHT = "Quarantine the flaky payment test and open an issue"


@pytest.fixture
def api(home: Path) -> Iterator[Api]:
    yield from make_api(home)


def test_agent_token_cannot_review_reviewer_token_can(api: Api) -> None:
    agent, reviewer = api.mint(permission="write"), api.mint(permission="review")
    api.ok("memory_write", {"scope": S, "key": "k", "value": WRONG}, token=agent)
    for name, extra in (("memory_verify", {}), ("memory_reject", {"reason": "no"})):
        refused = api.post(name, {"scope": S, "key": "k", **extra}, token=agent)
        assert error_of(refused, 403)["code"] == "forbidden"
    assert api.ok("memory_read", {"scope": S, "key": "k"})["lesson"]["trust"] == "candidate"
    verified = api.ok("memory_verify", {"scope": S, "key": "k"}, token=reviewer)
    assert verified["lesson"]["trust"] == "verified"


def test_rejected_value_is_gone_and_cannot_come_back(api: Api) -> None:
    reviewer, agent = api.mint(permission="review"), api.mint(permission="write")
    api.ok("memory_write", {"scope": S, "key": "flaky", "value": WRONG}, token=agent)
    api.ok("memory_write", {"scope": S, "key": "right", "value": RIGHT}, token=agent)
    api.ok("memory_reject", {"scope": S, "key": "flaky", "reason": "hides a race"}, token=reviewer)
    assert error_of(api.post("memory_read", {"scope": S, "key": "flaky"}), 404)["code"] == (
        "not_found"
    )
    assert api.ok("memory_read", {"scope": S, "key": "right"})["lesson"]["value"] == RIGHT
    listed = api.ok("memory_list", {"scope": S})["lessons"]
    assert [x["key"] for x in listed] == ["right"]
    hits = api.ok("memory_search", {"query": WRONG, "scopes": [S], "limit": 100})["hits"]
    assert [h["lesson"]["key"] for h in hits] == ["right"]
    for key, value in (
        ("flaky", WRONG),
        ("other", WRONG.upper()),
        ("spaced", WRONG.replace(" ", "  ")),
        # Invisible characters (zero-width space, soft hyphen, word joiner, BOM, bidi
        # override) leave the text reading the same: they are no way around a rejection.
        ("zwsp", WRONG.replace(" ", " \u200b", 1)),
        ("shy", WRONG[:3] + "\u00ad" + WRONG[3:]),
        ("joined", "\ufeff" + WRONG.replace(" ", "\u2060 ") + "\u202e"),
    ):
        refused = api.post("memory_write", {"scope": S, "key": key, "value": value}, token=agent)
        error = error_of(refused, 409)
        assert error["code"] == "rejected_value" and "hides a race" in error["message"]
    assert (
        api.ok("memory_write", {"scope": S, "key": "flaky", "value": RIGHT + " now"}, token=agent)[
            "result"
        ]
        == "updated"
    )


def test_an_agent_cannot_archive_a_verified_lesson_into_the_purge(api: Api) -> None:
    """Archived lessons are erased by the purge sweep after the retention: archiving a
    verified lesson is a reviewer's call, as setting it to expire is."""
    agent, reviewer = api.mint(permission="write"), api.mint(permission="review")
    api.ok("memory_write", {"scope": S, "key": "kept", "value": RIGHT}, token=agent)
    api.ok("memory_verify", {"scope": S, "key": "kept"}, token=reviewer)
    refused = api.post("memory_archive", {"scope": S, "key": "kept"}, token=agent)
    error = error_of(refused, 403)
    assert error["code"] == "forbidden" and "dispute" in error["hint"]
    lesson = api.ok("memory_read", {"scope": S, "key": "kept"})["lesson"]
    assert (lesson["status"], lesson["trust"]) == ("active", "verified")
    # Disputing it first is no way around that, for archiving or for an expiry.
    api.ok("memory_dispute", {"scope": S, "key": "kept", "reason": "stale?"}, token=agent)
    refused = api.post("memory_archive", {"scope": S, "key": "kept"}, token=agent)
    assert error_of(refused, 403)["code"] == "forbidden"
    expiring = {"scope": S, "key": "kept", "value": RIGHT, "ttl_days": 1}
    assert error_of(api.post("memory_write", expiring, token=agent), 403)["code"] == "forbidden"
    api.ok("memory_verify", {"scope": S, "key": "kept"}, token=reviewer)
    # Positive controls: the agent archives a candidate; a reviewer archives the verified one.
    api.ok("memory_write", {"scope": S, "key": "draft", "value": WRONG}, token=agent)
    archived = api.ok("memory_archive", {"scope": S, "key": "draft"}, token=agent)
    assert archived["lesson"]["status"] == "archived"
    archived = api.ok("memory_archive", {"scope": S, "key": "kept"}, token=reviewer)
    assert archived["lesson"]["status"] == "archived"
    # A lesson that is not there at all is not "not active".
    missing = error_of(api.post("memory_restore", {"scope": S, "key": "nope"}, token=agent), 404)
    assert missing["message"] == f"no lesson at {S} / nope"
