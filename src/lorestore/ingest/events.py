"""A GitHub delivery read: which events are admitted (a review comment created or edited, a
review submitted with a body, a review thread resolved, a comment on a pull request), which are
ignored and why, and what an admitted comment becomes: its address, text and provenance.

The shapes are GitHub's documented webhook payloads; a field this module needs and does not find
makes the delivery ``ignored`` with reason ``malformed``, never an error that GitHub would retry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from lorestore.core.errors import LorestoreError
from lorestore.core.records import Source
from lorestore.core.scope import parse_scope

CommentKind = Literal["pull_request_review_comment", "pull_request_review", "issue_comment"]
EVENT_KINDS: tuple[CommentKind, ...] = (
    "pull_request_review_comment",
    "pull_request_review",
    "issue_comment",
)
KEY_PREFIX = {
    "pull_request_review_comment": "github-review-comment-",
    "pull_request_review": "github-review-",
    "issue_comment": "github-pr-comment-",
}
# A hunk of a file the pull request adds: nothing of it exists before the branch.
_NEW_FILE_HUNK = re.compile(r"^@@ -0,0 \+\d+(?:,\d+)? @@")


@dataclass(frozen=True, slots=True)
class Comment:
    """An admitted comment, with what its lesson is made of."""

    kind: CommentKind
    action: str
    comment_id: int
    body: str
    author: str
    author_type: str | None
    association: str
    url: str | None
    repo: str  # owner/name, lower case
    pr: int
    commit: str | None
    branch: str | None
    path: str | None = None
    line: int | None = None
    new_file: bool = False

    @property
    def key(self) -> str:
        return f"{KEY_PREFIX[self.kind]}{self.comment_id}"

    @property
    def scope(self) -> str:
        """``branch::`` for a comment on a file only the pull request's branch has (its hunk
        adds the file), else ``repo::``."""
        if self.new_file and self.branch:
            try:
                return parse_scope(f"branch::{self.repo}::{self.branch}").text
            except LorestoreError:
                pass  # a branch name no scope can hold: the repository's scope
        return f"repo::{self.repo}"

    def value(self) -> str:
        """The comment's text, after the file and line it was made on (its context)."""
        where = f"PR #{self.pr}"
        if self.path:
            line = f" line {self.line}" if self.line is not None else ""
            where = f"{self.path}{line} ({where})"
        return f"Review comment on {where}:\n\n{self.body.strip()}"

    def source(self) -> Source:
        return Source(
            agent="github",
            trigger=self.kind,
            author=self.author,
            author_association=self.association,
            url=self.url,
            repo=self.repo,
            branch=self.branch,
            commit=self.commit,
            pr=self.pr,
        )


@dataclass(frozen=True, slots=True)
class Resolved:
    """A review thread resolved: its comments' lessons are seen again, by the PR's author."""

    repo: str
    pr: int
    pr_author: str
    comments: tuple[Comment, ...]


@dataclass(frozen=True, slots=True)
class Ignored:
    reason: str


@dataclass(frozen=True, slots=True)
class Ping:
    pass


Admission = Comment | Resolved | Ignored | Ping


def repository(payload: dict[str, Any]) -> tuple[str, str] | None:
    """``(owner/name, owner)`` in lower case, None when the payload names no repository (an
    organisation's ping)."""
    repo = payload.get("repository")
    if not isinstance(repo, dict) or not isinstance(repo.get("full_name"), str):
        return None
    full = repo["full_name"].strip().lower()
    return (full, full.split("/", 1)[0]) if "/" in full else None


def admit(event: str, payload: dict[str, Any]) -> Admission:
    """What to do with one delivery of ``event`` (the ``X-GitHub-Event`` header)."""
    if event == "ping":
        return Ping()
    action = str(payload.get("action") or "")
    try:
        if event == "pull_request_review_comment" and action in ("created", "edited"):
            return _review_comment(payload["comment"], payload, action)
        if event == "pull_request_review" and action == "submitted":
            review = payload["review"]
            if not (review.get("body") or "").strip():
                return Ignored("review_without_body")
            return _review(review, payload)
        if event == "pull_request_review_thread" and action == "resolved":
            pr = payload["pull_request"]
            comments = tuple(
                _review_comment(c, payload, "resolved") for c in payload["thread"]["comments"]
            )
            repo = _repo(payload)
            return Resolved(repo, int(pr["number"]), str(pr["user"]["login"]), comments)
        if event == "issue_comment" and action == "created":
            if not payload["issue"].get("pull_request"):
                return Ignored("issue_not_pull_request")
            return _issue_comment(payload)
    except (KeyError, TypeError, ValueError, AttributeError):
        return Ignored("malformed")
    # Counted by name: bounded, as GitHub's own names are.
    return Ignored((f"event:{event}.{action}" if action else f"event:{event}")[:120])


def _repo(payload: dict[str, Any]) -> str:
    found = repository(payload)
    if found is None:
        raise ValueError("no repository")
    return found[0]


def _user(thing: dict[str, Any]) -> tuple[str, str | None]:
    user = thing["user"]
    return str(user["login"]), user.get("type")


def _head(pr: dict[str, Any]) -> tuple[str | None, str | None]:
    head = pr.get("head") or {}
    return head.get("sha"), head.get("ref")


def _review_comment(c: dict[str, Any], payload: dict[str, Any], action: str) -> Comment:
    pr = payload["pull_request"]
    author, author_type = _user(c)
    commit, branch = _head(pr)
    line = c.get("line") if c.get("line") is not None else c.get("original_line")
    return Comment(
        kind="pull_request_review_comment",
        action=action,
        comment_id=int(c["id"]),
        body=str(c["body"] or ""),
        author=author,
        author_type=author_type,
        association=str(c.get("author_association") or "NONE"),
        url=c.get("html_url"),
        repo=_repo(payload),
        pr=int(pr["number"]),
        commit=c.get("commit_id") or commit,
        branch=branch,
        path=c.get("path"),
        line=None if line is None else int(line),
        new_file=bool(_NEW_FILE_HUNK.match(c.get("diff_hunk") or "")),
    )


def _review(review: dict[str, Any], payload: dict[str, Any]) -> Comment:
    pr = payload["pull_request"]
    author, author_type = _user(review)
    commit, branch = _head(pr)
    return Comment(
        kind="pull_request_review",
        action="submitted",
        comment_id=int(review["id"]),
        body=str(review["body"]),
        author=author,
        author_type=author_type,
        association=str(review.get("author_association") or "NONE"),
        url=review.get("html_url"),
        repo=_repo(payload),
        pr=int(pr["number"]),
        commit=review.get("commit_id") or commit,
        branch=branch,
    )


def _issue_comment(payload: dict[str, Any]) -> Comment:
    c, issue = payload["comment"], payload["issue"]
    author, author_type = _user(c)
    return Comment(
        kind="issue_comment",
        action="created",
        comment_id=int(c["id"]),
        body=str(c["body"] or ""),
        author=author,
        author_type=author_type,
        association=str(c.get("author_association") or "NONE"),
        url=c.get("html_url"),
        repo=_repo(payload),
        pr=int(issue["number"]),
        commit=None,
        branch=None,
    )
