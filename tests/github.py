"""GitHub webhook deliveries built by the tests (and the load benchmark) from GitHub's documented
event payloads (``pull_request_review_comment``, ``pull_request_review``,
``pull_request_review_thread``, ``issue_comment``, ``ping``), signed as GitHub signs them:
``X-Hub-Signature-256: sha256=<HMAC-SHA256 of the raw body>``. Only the fields GitHub documents
are used, with the values a real delivery carries; lorestore reads a few of them."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import uuid
from typing import Any

HEAD_SHA = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
# A hunk of a file the pull request changes (it exists before the branch) and one it adds.
CHANGED_HUNK = "@@ -16,33 +16,40 @@ def test_clock(monkeypatch):\n     now = fixed()\n+    mock()"
NEW_FILE_HUNK = "@@ -0,0 +1,12 @@\n+import pytest\n+\n+def test_new():"
_ids = itertools.count(1_000_001)


def user(login: str, kind: str = "User") -> dict[str, Any]:
    return {
        "login": login,
        "id": next(_ids),
        "node_id": "MDQ6VXNlcjE=",
        "type": kind,
        "site_admin": False,
        "html_url": f"https://github.com/{login}",
    }


def repository(full_name: str = "acme/app") -> dict[str, Any]:
    owner, name = full_name.split("/")
    return {
        "id": 1296269,
        "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5",
        "name": name,
        "full_name": full_name,
        "private": False,
        "owner": {**user(owner, "Organization")},
        "html_url": f"https://github.com/{full_name}",
        "default_branch": "main",
    }


def pull_request(
    number: int = 7, author: str = "dana", repo: str = "acme/app", branch: str = "feature/clock"
) -> dict[str, Any]:
    return {
        "url": f"https://api.github.com/repos/{repo}/pulls/{number}",
        "id": 1000 + number,
        "number": number,
        "state": "open",
        "title": "Use the clock fixture",
        "user": user(author),
        "body": "Replaces the mocked clock.",
        "html_url": f"https://github.com/{repo}/pull/{number}",
        "head": {"label": f"acme:{branch}", "ref": branch, "sha": HEAD_SHA, "user": user(author)},
        "base": {"label": "acme:main", "ref": "main", "sha": "9" * 40, "user": user("acme")},
        "author_association": "MEMBER",
    }


def review_comment(
    comment_id: int,
    body: str,
    *,
    author: str = "rev",
    association: str = "MEMBER",
    kind: str = "User",
    path: str = "tests/test_clock.py",
    line: int = 21,
    hunk: str = CHANGED_HUNK,
    repo: str = "acme/app",
    pr: int = 7,
) -> dict[str, Any]:
    return {
        "url": f"https://api.github.com/repos/{repo}/pulls/comments/{comment_id}",
        "pull_request_review_id": 42,
        "id": comment_id,
        "node_id": "MDI0OlB1bGxSZXF1ZXN0UmV2aWV3Q29tbWVudDEw",
        "diff_hunk": hunk,
        "path": path,
        "position": 1,
        "original_position": 4,
        "commit_id": HEAD_SHA,
        "original_commit_id": HEAD_SHA,
        "user": user(author, kind),
        "body": body,
        "created_at": "2026-11-30T10:00:00Z",
        "updated_at": "2026-11-30T10:00:00Z",
        "html_url": f"https://github.com/{repo}/pull/{pr}#discussion_r{comment_id}",
        "pull_request_url": f"https://api.github.com/repos/{repo}/pulls/{pr}",
        "author_association": association,
        "start_line": None,
        "original_start_line": None,
        "line": line,
        "original_line": line,
        "side": "RIGHT",
        "subject_type": "line",
    }


def review_comment_event(
    comment: dict[str, Any], action: str = "created", repo: str = "acme/app", pr: int = 7
) -> dict[str, Any]:
    payload = {
        "action": action,
        "comment": comment,
        "pull_request": pull_request(pr, repo=repo),
        "repository": repository(repo),
        "sender": comment["user"],
    }
    if action == "edited":
        payload["changes"] = {"body": {"from": "an earlier text"}}
    return payload


def review_event(
    review_id: int,
    body: str | None,
    *,
    author: str = "rev",
    association: str = "MEMBER",
    state: str = "commented",
    repo: str = "acme/app",
) -> dict[str, Any]:
    review = {
        "id": review_id,
        "node_id": "MDE3OlB1bGxSZXF1ZXN0UmV2aWV3ODA=",
        "user": user(author),
        "body": body,
        "commit_id": HEAD_SHA,
        "submitted_at": "2026-11-30T10:00:00Z",
        "state": state,
        "html_url": f"https://github.com/{repo}/pull/7#pullrequestreview-{review_id}",
        "pull_request_url": f"https://api.github.com/repos/{repo}/pulls/7",
        "author_association": association,
    }
    return {
        "action": "submitted",
        "review": review,
        "pull_request": pull_request(repo=repo),
        "repository": repository(repo),
        "sender": review["user"],
    }


def thread_event(comments: list[dict[str, Any]], action: str = "resolved") -> dict[str, Any]:
    return {
        "action": action,
        "thread": {"node_id": "PRRT_kwDOAAABbcdefgh", "comments": comments},
        "pull_request": pull_request(author="dana"),
        "repository": repository(),
        "sender": user("dana"),
    }


def issue_comment_event(
    comment_id: int,
    body: str,
    *,
    on_pull_request: bool = True,
    author: str = "rev",
    association: str = "MEMBER",
    action: str = "created",
) -> dict[str, Any]:
    issue: dict[str, Any] = {
        "url": "https://api.github.com/repos/acme/app/issues/7",
        "id": 77,
        "number": 7,
        "title": "Use the clock fixture",
        "user": user("dana"),
        "state": "open",
        "body": "…",
    }
    if on_pull_request:
        issue["pull_request"] = {
            "url": "https://api.github.com/repos/acme/app/pulls/7",
            "html_url": "https://github.com/acme/app/pull/7",
        }
    comment = {
        "id": comment_id,
        "node_id": "MDEyOklzc3VlQ29tbWVudDE=",
        "user": user(author),
        "body": body,
        "html_url": f"https://github.com/acme/app/pull/7#issuecomment-{comment_id}",
        "created_at": "2026-11-30T10:00:00Z",
        "author_association": association,
    }
    return {
        "action": action,
        "issue": issue,
        "comment": comment,
        "repository": repository(),
        "sender": comment["user"],
    }


def ping_event(repo: str | None = "acme/app", org: str | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "zen": "Design for failure.",
        "hook_id": 109948940,
        "hook": {
            "type": "Repository" if repo else "Organization",
            "id": 109948940,
            "events": ["pull_request_review_comment", "pull_request_review", "issue_comment"],
            "active": True,
            "config": {"content_type": "json", "insecure_ssl": "0", "url": "https://x/"},
        },
        "sender": user("acme-admin"),
    }
    if repo:
        payload["repository"] = repository(repo)
    if org:
        payload["organization"] = {"login": org, "id": 9}
    return payload


def body_of(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode("utf-8")


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def headers(
    event: str, body: bytes, secret: str | None, delivery: str | None = None
) -> dict[str, str]:
    """The headers GitHub sends with a delivery (signed when ``secret`` is given)."""
    found = {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/044aadd",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-GitHub-Hook-ID": "109948940",
    }
    if secret is not None:
        found["X-Hub-Signature-256"] = signature(secret, body)
    return found
