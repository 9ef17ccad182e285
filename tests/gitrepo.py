"""A real git repository for tests that read context from git: a committed example/app work
tree with a remote, made the current directory."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def make_work_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A committed repository of example/app with tests/conftest.py, as the current directory."""
    root = tmp_path / "app"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "conftest.py").write_text("DATABASE = 'postgres'\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "remote", "add", "origin", "https://github.com/Example/App.git")
    git(root, "add", ".")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "init")
    monkeypatch.chdir(root)
    return root
