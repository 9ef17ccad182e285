"""A captured comment's lesson depends on the commented file at the comment's commit: its blob
id, read from GitHub's contents API with LORESTORE_GITHUB_TOKEN (here a loopback server that
answers that route as GitHub documents it), so recall's `files` policy holds the lesson once
the file changed and offers it while the file is as commented. Without a token, or when GitHub
does not answer, the lesson is still captured, without depends_on."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from tests import github
from tests.ingest.conftest import Hook

FILE = b"def test_clock(frozen_clock):\n    assert frozen_clock.now()\n"
BLOB = hashlib.sha1(b"blob %d\0" % len(FILE) + FILE).hexdigest()  # git's blob id
TOKEN = "ghs_" + "t0ken" * 8
TEXT = "Freeze time with the frozen_clock fixture; a mocked clock hides the retry bug."
KEY = "github-review-comment-900"


class Contents(BaseHTTPRequestHandler):
    """GitHub's `GET /repos/{owner}/{repo}/contents/{path}?ref=` for one file at one commit."""

    asked: list[tuple[str, str | None, str | None]] = []  # noqa: RUF012 - the server's log

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        ref = parse_qs(url.query).get("ref", [None])[0]
        self.asked.append((url.path, ref, self.headers.get("Authorization")))
        wanted = "/repos/acme/app/contents/tests/test_clock.py"
        if (
            url.path != wanted
            or ref != github.HEAD_SHA
            or self.headers["Authorization"] != (f"Bearer {TOKEN}")
        ):
            self._answer(404, {"message": "Not Found"})
            return
        self._answer(200, {"type": "file", "path": "tests/test_clock.py", "sha": BLOB})

    def _answer(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def contents(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """The loopback contents API, set in the environment before the application is made."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Contents)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Contents.asked = []
    monkeypatch.setenv("LORESTORE_GITHUB_API_URL", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("LORESTORE_GITHUB_TOKEN", TOKEN)
    yield Contents.asked
    server.shutdown()
    server.server_close()


def _capture(hook: Hook, path: str = "tests/test_clock.py") -> dict[str, Any]:
    comment = github.review_comment(900, TEXT, path=path)
    answer = hook.post("pull_request_review_comment", github.review_comment_event(comment))
    assert answer.json()["outcome"] == "created"
    lesson: dict[str, Any] = hook.api.ok("memory_read", {"scope": "repo::acme/app", "key": KEY})[
        "lesson"
    ]
    return lesson


def _recall(hook: Hook, blob: str) -> dict[str, Any]:
    hook.api.ok("memory_verify", {"scope": "repo::acme/app", "key": KEY, "note": "checked"})
    recall: dict[str, Any] = hook.api.ok(
        "memory_recall",
        {
            "repo": "acme/app",
            "task": "fix the flaky clock test",
            "blobs": {"tests/test_clock.py": blob},
        },
    )
    return recall


def test_the_lesson_depends_on_the_commented_file_at_its_commit(
    contents: list[Any], hook: Hook
) -> None:
    lesson = _capture(hook)
    assert lesson["depends_on"] == [{"path": "tests/test_clock.py", "blob": BLOB}]
    assert contents == [
        ("/repos/acme/app/contents/tests/test_clock.py", github.HEAD_SHA, f"Bearer {TOKEN}")
    ]
    hook.api.ok("memory_policy", {"scope": "repo::acme/app", "revision_policy": "files"})
    # The file as commented: offered (the control); the file changed since: held.
    offered = _recall(hook, BLOB)
    assert KEY in {o["lesson"]["key"] for o in offered["offered"]}
    changed = _recall(hook, "0" * 40)
    held = {h["key"]: h["reasons"] for h in changed["held"]}
    assert held[KEY] == ["file_changed:tests/test_clock.py"]


def test_a_file_github_does_not_know_leaves_the_lesson_without_depends_on(
    contents: list[Any], hook: Hook
) -> None:
    lesson = _capture(hook, path="docs/gone.md")
    assert lesson["depends_on"] == [] and lesson["trust"] == "candidate"
    assert [path for path, _, _ in contents] == ["/repos/acme/app/contents/docs/gone.md"]


def test_without_a_token_github_is_not_asked(hook: Hook) -> None:
    assert _capture(hook)["depends_on"] == []
