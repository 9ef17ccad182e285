"""The signal filter and the secret refusal, through POST /webhooks/github on both backends: bot
noise, a bare code block and too little prose are ignored and counted; a comment holding a secret
is refused, audited with the pattern's name only, and its text is stored nowhere."""

from __future__ import annotations

import pytest
from tests import github
from tests.conftest import dump_text
from tests.ingest.conftest import Hook

from lorestore.core.secrets import SECRET_PATTERNS, find_secret
from lorestore.ingest.signal import judge

# One sample per pattern, each inside an otherwise useful review comment. Built from parts so
# that no scanner takes this file for a leak.
SECRETS = {
    "private_key_block": "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7",
    "github_token": "ghp_" + "x1Y2z3" * 6,
    "lorestore_token": "lst_" + "A" * 43,
    "aws_access_key": "AKIA" + "IOSFODNN7EXAMPLE",
    "slack_token": "xoxb-" + "1234567890-abcdefghij",
    "stripe_key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "google_api_key": "AIza" + "SyA-1234567890abcdefghijklmnopqrstu",
    "jwt": "eyJ"
    + "hbGciOiJIUzI1NiJ9"
    + ".eyJ"
    + "zdWIiOiIxMjM0NTY3ODkwIn0"
    + ".dozjgNryP4J3jVmNHl0w5N",
    "password_in_url": "postgres://deploy:" + "hunter2hunter2@db.internal/app",
    "assigned_secret": "API_KEY = " + "'9f8e7d6c5b4a39281706'",
}


def test_every_pattern_has_a_sample_and_each_sample_is_named_by_its_own_pattern() -> None:
    assert set(SECRETS) == set(SECRET_PATTERNS)
    for name, sample in SECRETS.items():
        assert find_secret(f"Use this in the fixture: {sample} and it works.") == name
    # The control: a comment that only talks about secrets holds none.
    assert find_secret("Never log the API key or the password; read them from the vault.") is None


@pytest.mark.parametrize("pattern", sorted(SECRETS))
def test_a_comment_with_a_secret_is_refused_audited_by_name_and_never_stored(
    hook: Hook, pattern: str
) -> None:
    sample = SECRETS[pattern]
    body = f"Tests need this to reach staging, put it in conftest: {sample}"
    comment = github.review_comment(600, body)
    answer = hook.post("pull_request_review_comment", github.review_comment_event(comment))
    assert answer.status_code == 202
    assert answer.json()["outcome"] == f"secret:{pattern}"
    assert hook.lessons() == []
    assert sample not in dump_text(hook.api.service.store)
    assert sample not in answer.text
    events = hook.api.ok("memory_audit", {"limit": 5})["events"]
    refused = [e for e in events if e["action"] == "webhook.refused"]
    assert len(refused) == 1
    assert refused[0]["detail"]["pattern"] == pattern
    assert sample not in str(refused[0])
    assert hook.stats() == {f"secret:{pattern}": 1}


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (
            github.review_comment_event(
                github.review_comment(
                    601,
                    "Consider using the fixture for the clock here.",
                    author="ci-bot[bot]",
                    kind="Bot",
                )
            ),
            "bot",
        ),
        (
            github.review_comment_event(github.review_comment(602, "✅ CI passed\n❌ lint failed")),
            "ci_status",
        ),
        (
            github.review_comment_event(
                github.review_comment(
                    603, "Bumps [requests](https://github.com/psf/requests) from 2.31.0 to 2.32.0."
                )
            ),
            "dependency_bot",
        ),
        (
            github.review_comment_event(
                github.review_comment(604, "```python\nclock = frozen_clock()\n```")
            ),
            "code_only",
        ),
        (
            github.review_comment_event(
                github.review_comment(605, "> Should this mock the clock?\n\nnit: no")
            ),
            "too_short",
        ),
    ],
)
def test_noise_is_ignored_and_counted(hook: Hook, payload: dict[str, object], reason: str) -> None:
    answer = hook.post("pull_request_review_comment", payload)
    assert (answer.status_code, answer.json()["outcome"]) == (202, reason)
    assert hook.lessons() == []
    assert hook.stats() == {reason: 1}


def test_a_sender_that_is_a_bot_is_noise_whoever_the_comment_names(hook: Hook) -> None:
    payload = github.review_comment_event(
        github.review_comment(606, "Use the fixture, not a mock.")
    )
    payload["sender"] = github.user("renovate[bot]", "Bot")
    answer = hook.post("pull_request_review_comment", payload)
    assert answer.json()["outcome"] == "bot"
    # The control: the same comment sent by a person lands.
    person = github.review_comment_event(github.review_comment(607, "Use the fixture, not a mock."))
    assert hook.post("pull_request_review_comment", person).json()["outcome"] == "created"


def test_the_filter_counts_prose_after_quotes_and_code() -> None:
    person = {"author_type": "User", "sender_type": "User"}
    quoted = "> " + "a long quoted paragraph of the reviewer before " * 3 + "\n\nagreed"
    assert judge(quoted, **person).reason == "too_short"
    code = "```\n" + "x = 1\n" * 30 + "```\nSee above."
    assert judge(code, **person).reason == "too_short"
    # The controls: twenty characters of the reviewer's own words are enough, beside code.
    assert judge("Freeze it with the fixture.\n```\nx = 1\n```", **person).kept
    assert judge("Tests failed because the clock is mocked; use the fixture instead", **person).kept


def test_every_pattern_has_the_literals_it_cannot_match_without() -> None:
    """find_secret runs a pattern only on a text holding one of its literals: each example
    above holds one (a pattern without literals would never run, and this fails)."""
    from lorestore.core.secrets import _NEEDLES

    assert set(_NEEDLES) == set(SECRET_PATTERNS)
    for name, text in SECRETS.items():
        haystack = text.lower() if name == "assigned_secret" else text
        assert all(any(n in haystack for n in group) for group in _NEEDLES[name]), name


def test_an_assignment_is_found_wherever_it_stands_in_a_long_text() -> None:
    """Assignments are looked for around each `:` and `=` (core/secrets.py): one after a long
    text, and one of several signs, are still found; short values and prose are not."""
    long = "the fixture notes: " + "words of a long lesson " * 40
    assert find_secret(long + "PASSWORD: " + "abcdefghijklmnop") == "assigned_secret"
    assert find_secret("a=1, b=2, then client-secret = " + "'0123456789abcdef'") == (
        "assigned_secret"
    )
    assert find_secret(long + "key: short") is None  # the control: too short to be a secret
