"""An isolated user for host installs: HOME (the user's own configuration), LORESTORE_HOME
(the store and the install manifest) and a git repository as the current directory."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.gitrepo import git
from typer.testing import CliRunner

from lorestore.cli.main import app

LORESTORE = str(Path(sys.prefix) / "bin" / "lorestore")


@dataclass
class Place:
    tmp: Path
    user: Path  # HOME
    store: Path  # LORESTORE_HOME
    repo: Path  # the current directory, a git checkout

    def run(self, *args: str) -> tuple[int, str, str]:
        done = CliRunner().invoke(app, list(args), catch_exceptions=False)
        return done.exit_code, done.stdout, done.stderr

    def files(self) -> dict[str, bytes]:
        """Every file of the user's home and the repository (not .git), by relative path."""
        found: dict[str, bytes] = {}
        for base, name in ((self.user, "home"), (self.repo, "repo")):
            for path in sorted(base.rglob("*")):
                rel = path.relative_to(base)
                if path.is_file() and rel.parts[0] != ".git":
                    found[f"{name}/{rel}"] = path.read_bytes()
        return found

    def dirs(self) -> set[str]:
        return {
            str(p.relative_to(self.tmp))
            for base in (self.user, self.repo)
            for p in base.rglob("*")
            if p.is_dir() and ".git" not in p.relative_to(base).parts
        }

    def normalised(self, data: bytes) -> str:
        return data.decode().replace(LORESTORE, "<LORESTORE>").replace(str(self.tmp), "<TMP>")


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Place:
    return make_place(tmp_path, monkeypatch)


def make_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Place:
    user, store, repo = tmp_path / "user", tmp_path / "store", tmp_path / "repo"
    user.mkdir()
    repo.mkdir()
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("LORESTORE_HOME", str(store))
    for name in ("LORESTORE_DATABASE_URL", "LORESTORE_URL", "LORESTORE_TOKEN", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "remote", "add", "origin", "https://github.com/acme/widget.git")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q",
        "--allow-empty", "-m", "init")  # fmt: skip
    monkeypatch.chdir(repo)
    return Place(tmp_path, user, store, repo)
