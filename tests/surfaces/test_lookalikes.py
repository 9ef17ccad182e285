"""Look-alikes and curated restores (issue 19, items 9, 12 and 13), through the real handlers:
the CLI (a person, through its Typer app), the stdio MCP server (an agent, driven by the SDK
client) and REST (tokens), on SQLite and PostgreSQL, each refusal or hold beside a positive
control.

- 9: restoring a verified or disputed lesson a reviewer archived needs what archiving it
  needs (``review``), not only ``write``.
- 12: a key of invisible characters only, or with one inside, is refused (``invalid_key``);
  a key confusable with another key of the scope (``pg-local`` with a Cyrillic o and c, beside
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


# --- 19.12: look-alike keys ---------------------------------------------------------------

VERIFIED = "Run the local PostgreSQL on port 5433"
CYRILLIC_KEY = "pg-l\u043e\u0441al"  # its o and c are Cyrillic


def test_cli_refuses_invisible_and_blank_keys_and_holds_a_confusable_one(
    cli: Cli, backend: str
) -> None:
    cli.ok("write", S, "pg-local", VERIFIED)
    cli.ok("verify", S, "pg-local")
    before = cli.ok("audit")["events"]
    for key, code in (
        ("\u200b\u200b", "invalid_key"),  # zero-width spaces only
        ("\u2800", "invalid_key"),  # a braille blank only
        ("pg\u200b-local", "invalid_key"),  # a zero-width space inside
        ("pg-local\u2060", "invalid_key"),  # a word joiner at the end
    ):
        refused = cli("write", S, key, "Run it on 5432", "--json")
        assert refused.exit_code == 2, key
        error = refused.error()
        assert error["code"] == code and error["hint"], error
    assert "'pg-local'" in cli("write", S, "pg\u200b-local", "x", "--json").error()["hint"]
    assert cli.ok("audit")["events"] == before  # the refusals changed nothing
    # A key confusable with pg-local is stored held for review, not offered beside it.
    held = cli.ok("write", S, CYRILLIC_KEY, "Run the local PostgreSQL on port 5432")
    assert held["result"] == "created" and held["held"] == ["confusable_key:pg-local"]
    assert held["lesson"]["trust"] == "disputed"
    recall = cli.ok("recall", "--repo", "acme/app", "--task", "local PostgreSQL port")
    assert [o["lesson"]["key"] for o in recall["offered"]] == ["pg-local"]
    reasons = {h["key"]: h["reasons"] for h in recall["held"]}
    assert reasons[CYRILLIC_KEY] == ["disputed"]
    queue = cli.ok("review-queue")["items"]
    assert [(i["reason"], i["lesson"]["key"]) for i in queue] == [("disputed", CYRILLIC_KEY)]
    # Positive controls: a genuinely different key lands as a candidate and is offered.
    other = cli.ok("write", S, "pg-remote", "Run the remote PostgreSQL on port 6432")
    assert (other["result"], other["held"], other["lesson"]["trust"]) == (
        "created",
        [],
        "candidate",
    )
    recall = cli.ok("recall", "--repo", "acme/app", "--task", "PostgreSQL port")
    assert {o["lesson"]["key"] for o in recall["offered"]} == {"pg-local", "pg-remote"}


def test_mcp_agent_key_lookalike_is_held_a_distinct_key_is_not(
    home: Path, cli: Cli, backend: str
) -> None:
    cli.ok("write", S, "pg-local", VERIFIED)
    cli.ok("verify", S, "pg-local")

    async def agent(tools: Tools) -> None:
        error = await tools.error("memory_write", scope=S, key="\u200b", value="x")
        assert error["code"] == "invalid_key"
        error = await tools.error("memory_write", scope=S, key="pg\u200b-local", value="x")
        assert error["code"] == "invalid_key" and "U+200B" in error["message"]
        for key in (CYRILLIC_KEY, "PG-LOCAL", "\uff50\uff47-local"):  # Cyrillic, case, full width
            out = await tools.ok("memory_write", scope=S, key=key, value=f"Use 5432 ({key})")
            assert "confusable_key:pg-local" in out["held"], key
            assert out["lesson"]["trust"] == "disputed"
        fine = await tools.ok("memory_write", scope=S, key="pg-locale", value="Use C.UTF-8")
        assert (fine["held"], fine["lesson"]["trust"]) == ([], "candidate")
        recall = await tools.ok("memory_recall", repo="acme/app", task="port 5432 local")
        offered = {o["lesson"]["key"] for o in recall["offered"]}
        assert "pg-local" in offered and CYRILLIC_KEY not in offered

    run_mcp(home, agent, **mcp_env(backend))


# --- 19.13: look-alike values and a tombstone --------------------------------------------

REJECTED = "Use tabs for indentation"
SPELLINGS = (
    "Use tabs for indentation.",  # a trailing stop
    "Us\u0435 tabs for indentation",  # a Cyrillic e (U+0435)
    "Use\u2800tabs\u2800for\u2800indentation",  # braille blanks for spaces
    "**Use tabs** for *indentation*",  # markdown emphasis
    "_Use tabs for indentation_",
    "`Use tabs` for indentation",
)
NEAR = "Use tabs, for indentation"  # other punctuation: not refused, held
DISTINCT = ("Use spaces for indentation", "Use tabs for alignment")


def test_cli_refuses_lookalike_values_holds_a_near_one_stores_distinct_ones(
    cli: Cli, backend: str
) -> None:
    cli.ok("write", S, "indent", REJECTED)
    cli.ok("reject", S, "indent", "--reason", "the style guide says spaces")
    before = cli.ok("audit")["events"]
    for n, spelling in enumerate(SPELLINGS):
        refused = cli("write", S, f"copy-{n}", spelling, "--json")
        assert refused.exit_code == 1, spelling
        error = refused.error()
        assert error["code"] == "rejected_value" and error["details"]["key"] == "indent"
    assert cli.ok("audit")["events"] == before  # the refusals changed nothing
    near = cli.ok("write", S, "near", NEAR)
    assert (near["result"], near["held"], near["lesson"]["trust"]) == (
        "created",
        ["near_rejected:indent"],
        "disputed",
    )
    # Positive controls: two genuinely different lessons are both stored and served.
    for n, value in enumerate(DISTINCT):
        out = cli.ok("write", S, f"distinct-{n}", value)
        assert (out["result"], out["held"], out["lesson"]["trust"]) == ("created", [], "candidate")
    recall = cli.ok("recall", "--repo", "acme/app", "--task", "tabs spaces indentation alignment")
    assert {o["lesson"]["key"] for o in recall["offered"]} == {"distinct-0", "distinct-1"}
    assert {h["key"]: h["reasons"] for h in recall["held"]}["near"] == ["disputed"]
    # The rejected value still lands outside the tombstone's ladder.
    assert cli.ok("write", "repo::acme/other", "indent", SPELLINGS[1])["result"] == "created"


def test_mcp_refuses_lookalike_values_holds_a_near_one(home: Path, cli: Cli, backend: str) -> None:
    cli.ok("write", S, "indent", REJECTED)
    cli.ok("reject", S, "indent", "--reason", "the style guide says spaces")

    async def agent(tools: Tools) -> None:
        for spelling in SPELLINGS:
            error = await tools.error("memory_write", scope=S, key="again", value=spelling)
            assert error["code"] == "rejected_value", spelling
        near = await tools.ok("memory_write", scope=S, key="again", value=NEAR)
        assert near["held"] == ["near_rejected:indent"]
        assert near["lesson"]["trust"] == "disputed"
        for n, value in enumerate(DISTINCT):
            out = await tools.ok("memory_write", scope=S, key=f"distinct-{n}", value=value)
            assert (out["held"], out["lesson"]["trust"]) == ([], "candidate")
        recall = await tools.ok("memory_recall", repo="acme/app", task="tabs indentation")
        offered = {o["lesson"]["key"] for o in recall["offered"]}
        assert "again" not in offered and "distinct-0" in offered

    run_mcp(home, agent, **mcp_env(backend))


def test_a_value_near_a_rejected_revision_is_held_until_the_rejection_is_lifted(
    cli: Cli, backend: str
) -> None:
    cli.ok("write", S, "indent", "Use spaces for indentation")
    cli.ok("verify", S, "indent")
    assert cli.ok("write", S, "indent", REJECTED)["result"] == "proposed"
    cli.ok("reject", S, "indent", "--revision", "--reason", "spaces, as the guide says")
    refused = cli("write", S, "tabs", SPELLINGS[1], "--json")
    assert refused.exit_code == 1 and refused.error()["code"] == "rejected_value"
    held = cli.ok("write", S, "tabs", NEAR)
    assert (held["held"], held["lesson"]["trust"]) == (["near_rejected:indent"], "disputed")
    # Lifted, the rejection holds nothing any more: the near value lands as a candidate.
    cli.ok("reject", S, "indent", "--undo", "--revision", "--reason", "tabs are fine after all")
    out = cli.ok("write", S, "tabs-again", NEAR)
    assert (out["held"], out["lesson"]["trust"]) == ([], "candidate")
