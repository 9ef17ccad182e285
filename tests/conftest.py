"""Shared fixtures: real SQLite files in a temporary LORESTORE_HOME, a controllable clock, and
the CLI through its real Typer app."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lorestore.auth.actor import local_actor
from lorestore.cli.main import app
from lorestore.service import LessonService
from lorestore.storage.sqlite import SQLiteStore


class Clock:
    """A clock tests move by hand."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private LORESTORE_HOME; the CLI and spawned servers use its lorestore.db."""
    path = tmp_path / "home"
    monkeypatch.setenv("LORESTORE_HOME", str(path))
    monkeypatch.delenv("LORESTORE_DATABASE_URL", raising=False)
    monkeypatch.delenv("LORESTORE_SESSION", raising=False)
    return path


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(home: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(home / "lorestore.db")
    yield s
    s.close()


@pytest.fixture
def service(store: SQLiteStore, clock: Clock) -> LessonService:
    return LessonService(store, clock=clock)


@pytest.fixture
def actor():  # type: ignore[no-untyped-def]
    return local_actor(session="session-1")


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    def error(self) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.stderr)["error"]
        return body


class Cli:
    """Runs ``lorestore`` through its Typer app, as the console script does."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None) -> CliResult:
        result = self.runner.invoke(app, list(args), input=input, catch_exceptions=False)
        return CliResult(result.exit_code, result.stdout, result.stderr)

    def ok(self, *args: str, input: str | None = None) -> Any:
        result = self(*args, "--json", input=input)
        assert result.exit_code == 0, result.stderr
        return result.json()


@pytest.fixture
def cli(home: Path) -> Cli:
    return Cli()
