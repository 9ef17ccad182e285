"""Look-alikes and curated restores (issue 19, items 9, 12 and 13), through the real handlers:
the CLI (a person, through its Typer app), the stdio MCP server (an agent, driven by the SDK
client) and REST (tokens), on SQLite and PostgreSQL, each refusal or hold beside a positive
control.

- 9: restoring a verified or disputed lesson a reviewer archived needs what archiving it
  needs (``review``), not only ``write``.
- 12: a key of invisible characters only, or with one inside, is refused (``invalid_key``);
  a key confusable with another key of the scope (``pg-lосal`` in Cyrillic beside
  ``pg-local``) is stored held for review (``disputed``), not offered beside it.
- 13: after ``Use tabs for indentation`` is rejected, its trailing-stop, Cyrillic, U+2800 and
  markdown-emphasis spellings are refused; a near-duplicate that still gets through (other
  punctuation) is held for review instead of served.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Cli
from tests.migrating import pg_url
from tests.pg import Template
from tests.serving import error_of, make_api
from tests.stdio import Tools, run_mcp

S = "repo::acme/app"


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The store of every surface: LORESTORE_HOME's SQLite file, or a PostgreSQL database
    reached as the application role (LORESTORE_DATABASE_URL)."""
    if request.param == "sqlite":
        return f"sqlite:///{home / 'lorestore.db'}"
    template: Template = request.getfixturevalue("pg_template")
    url = pg_url(template.app_url(request.getfixturevalue("pg_database")))
    monkeypatch.setenv("LORESTORE_DATABASE_URL", url)
    return url


def mcp_env(backend: str) -> dict[str, str]:
    return {} if backend.startswith("sqlite") else {"LORESTORE_DATABASE_URL": backend}


# --- 19.9: restoring a curated lesson is a reviewer's call --------------------------------


def test_an_agent_cannot_restore_a_curated_lesson_a_reviewer_archived(
    home: Path, cli: Cli, backend: str
) -> None:
    cli.ok("write", S, "kept", "Run the migrations before the fixtures")
    cli.ok("verify", S, "kept")
    cli.ok("write", S, "doubted", "Pin the linter to one version")
    cli.ok("dispute", S, "doubted", "--reason", "stale?")
    cli.ok("write", S, "draft", "Prefer small commits")
    for key in ("kept", "doubted"):
        assert cli.ok("archive", S, key)["lesson"]["status"] == "archived"

    async def agent(tools: Tools) -> None:
        for key, trust in (("kept", "verified"), ("doubted", "disputed")):
            error = await tools.error("memory_restore", scope=S, key=key)
            assert error["code"] == "forbidden", error
            assert f"restoring a {trust} lesson" in error["message"]
            assert error["details"]["trust"] == trust
            assert "reviewer" in error["hint"]
        # Positive control: the agent archives and restores a candidate of its own.
        await tools.ok("memory_archive", scope=S, key="draft")
        restored = await tools.ok("memory_restore", scope=S, key="draft")
        assert restored["lesson"]["status"] == "active"

    run_mcp(home, agent, **mcp_env(backend))
    # The refusals changed nothing; the person (a reviewer) restores both.
    for key, trust in (("kept", "verified"), ("doubted", "disputed")):
        history = cli.ok("history", S, key)
        assert (history["status"], history["trust"]) == ("archived", trust)
        restored = cli.ok("restore", S, key)["lesson"]
        assert (restored["status"], restored["trust"]) == ("active", trust)


def test_a_write_token_cannot_restore_a_curated_lesson_a_review_token_can(
    home: Path, backend: str
) -> None:
    for api in make_api(home):
        agent, reviewer = api.mint(permission="write"), api.mint(permission="review")
        address = {"scope": S, "key": "kept"}
        api.ok("memory_write", {**address, "value": "Use the COPY loader"}, token=agent)
        api.ok("memory_verify", address, token=reviewer)
        api.ok("memory_archive", address, token=reviewer)
        error = error_of(api.post("memory_restore", address, token=agent), 403)
        assert error["code"] == "forbidden" and error["details"] == {"trust": "verified"}
        restored = api.ok("memory_restore", address, token=reviewer)["lesson"]
        assert (restored["status"], restored["trust"]) == ("active", "verified")


def _lesson(result: Any) -> dict[str, Any]:
    lesson: dict[str, Any] = result["lesson"]
    return lesson
