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
