"""What git says about a working directory: owner/name from a remote URL; the root, branch
and commit of a work tree, and how many git processes it takes to learn them."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from tests.gitrepo import git, make_work_tree

from lorestore.gitinfo import GitContext, _read_context, _started, read_ahead, repo_from_remote


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/Acme/App.GIT",
        "https://github.com/acme/app.git",
        "https://github.com/Acme/App.Git/",
        "https://github.com/acme/app",
        "git@github.com:Acme/App.GIT",
        "ssh://git@gitlab.example.com:2222/acme/app.git",
    ],
)
def test_repo_from_remote_strips_dot_git_in_any_case(url: str) -> None:
    assert repo_from_remote(url) == "acme/app"


def test_repo_from_remote_keeps_a_name_that_only_ends_like_git() -> None:
    assert repo_from_remote("https://github.com/acme/legit") == "acme/legit"
    assert repo_from_remote("https://github.com/acme/app.github.io.git") == "acme/app.github.io"


@pytest.mark.parametrize(
    ("url", "repo"),
    [
        ("https://github.com/acme/app//", "acme/app"),
        ("https://github.com/acme/app.git?ref=x#frag", "acme/app"),
        ("https://dev.azure.com/org/proj/_git/repo", "proj/repo"),
        ("file:///srv/git/acme/app.git", "acme/app"),
        ("/srv/git/acme/app.git", "acme/app"),
        ("github.com:acme/app.git", "acme/app"),
        ("https://git.example.com/app.git", None),  # a host is not an owner
        ("git@git.example.com:app.git", None),
        ("https://github.com/", None),
    ],
)
def test_repo_from_remote_reads_the_path_not_the_host(url: str, repo: str | None) -> None:
    assert repo_from_remote(url) == repo


def _counting_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `git` first on PATH that logs each invocation, then runs the real one."""
    real = shutil.which("git")
    assert real is not None
    shim = tmp_path / "bin" / "git"
    shim.parent.mkdir()
    log = tmp_path / "git.log"
    shim.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")
    return log


def test_a_context_is_read_with_two_git_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_work_tree(tmp_path, monkeypatch)
    head = git(root, "rev-parse", "HEAD")
    log = _counting_git(tmp_path, monkeypatch)
    context = _read_context(root / "tests")
    assert context == GitContext(root=str(root), repo="example/app", branch="main", revision=head)
    assert len(log.read_text().splitlines()) == 2  # the root, HEAD and its name; the remote


def test_a_detached_head_has_its_commit_and_no_branch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_work_tree(tmp_path, monkeypatch)
    git(root, "checkout", "-q", "--detach")
    context = _read_context(root)
    assert context is not None
    assert (context.branch, context.revision) == (None, git(root, "rev-parse", "HEAD"))


def test_before_the_first_commit_the_branch_is_known_and_no_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "new"
    root.mkdir()
    git(root, "init", "-q", "-b", "trunk")
    git(root, "remote", "add", "origin", "git@github.com:Example/New.git")
    assert _read_context(root) == GitContext(
        root=str(root), repo="example/new", branch="trunk", revision=None
    )
    assert _read_context(tmp_path) is None  # the control: outside any work tree


def test_a_context_read_ahead_is_answered_by_the_processes_started_early(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hook starts git before it loads the store (read_ahead): the context read later is
    the same, from those two processes, and git is not asked again."""
    root = make_work_tree(tmp_path, monkeypatch)
    head = git(root, "rev-parse", "HEAD")
    log = _counting_git(tmp_path, monkeypatch)
    read_ahead(root)
    deadline = time.monotonic() + 10
    while len(_lines(log)) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(_lines(log)) == 2  # both started before the context was asked for
    context = _read_context(root)
    assert context == GitContext(root=str(root), repo="example/app", branch="main", revision=head)
    assert len(_lines(log)) == 2
    assert _read_context(root) == context  # the control: read again, git is asked again
    assert len(_lines(log)) == 4


def test_a_context_read_ahead_outside_a_work_tree_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    read_ahead(outside)
    assert _read_context(outside) is None
    assert not any(folder == str(outside) for folder, _ in _started)  # nothing left running


def _lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []
