"""What git says about a working directory: owner/name from a remote URL."""

from __future__ import annotations

import pytest

from lorestore.gitinfo import repo_from_remote


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
