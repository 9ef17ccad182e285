"""``lorestore reindex`` and doctor's retrieval check through the CLI: a vector of another
model (or none) is embedded again, with --json, idempotently, on SQLite and on PostgreSQL (a
superuser URL, as the operator commands take); without semantic retrieval reindex exits 1
with a fix, and doctor says retrieval is lexical only."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from tests.conftest import Cli
from tests.migrating import pg_url
from tests.pg import Template, admin_url

from lorestore.semantic.model import MODEL_NAME


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The URL the CLI's commands use (LORESTORE_DATABASE_URL) and the operator's URL."""
    if request.param == "sqlite":
        return f"sqlite:///{home / 'lorestore.db'}"
    template: Template = request.getfixturevalue("pg_template")
    name: str = request.getfixturevalue("pg_database")
    monkeypatch.setenv("LORESTORE_DATABASE_URL", pg_url(template.app_url(name)))
    admin = conninfo_to_dict(admin_url())
    admin["dbname"] = name
    return pg_url(make_conninfo(**admin))


def stale(url: str, key: str) -> None:
    """Make one lesson's vector another model's, as the operator can."""
    update = (
        "UPDATE lesson_vectors SET model = 'other/model' "
        "WHERE lesson_pk = (SELECT pk FROM lessons WHERE key = {p})"
    )
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            assert conn.execute(update.format(p="?"), [key]).rowcount == 1
        return
    with psycopg.connect(url, autocommit=True) as pg:
        assert pg.execute(update.format(p="%s"), [key]).rowcount == 1


def reindex(cli: Cli, url: str) -> dict[str, Any]:
    result: dict[str, Any] = cli.ok("reindex", "--database-url", url)
    return result


def test_reindex_embeds_what_lacks_the_models_vector(cli: Cli, database: str) -> None:
    for key in ("pg", "ruff", "ci"):
        cli.ok("write", "global", key, f"The {key} lesson for the reindex test.")
    first = reindex(cli, database)
    assert (first["embedded"], first["remaining"]) == (0, 0)  # every write embedded already
    assert first["model"].startswith(MODEL_NAME + "@")
    stale(database, "pg")
    stale(database, "ci")
    second = reindex(cli, database)
    assert (second["embedded"], second["remaining"]) == (2, 0)
    assert reindex(cli, database)["embedded"] == 0  # idempotent
    human = cli("reindex", "--database-url", database)
    assert human.exit_code == 0 and "embedded 0 lessons" in human.stdout


def test_without_semantic_retrieval_reindex_fails_and_doctor_says_lexical(
    cli: Cli, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli.ok("write", "global", "pg", "The pg lesson.")
    checks = {c["name"]: c for c in cli.ok("doctor")["checks"]}
    assert checks["retrieval"]["detail"].startswith("hybrid: full-text and " + MODEL_NAME)
    monkeypatch.setenv("LORESTORE_SEMANTIC", "off")
    refused = cli("reindex", "--json")
    assert refused.exit_code == 1 and refused.error()["code"] == "config_error"
    assert "LORESTORE_SEMANTIC" in refused.error()["message"]
    checks = {c["name"]: c for c in cli.ok("doctor")["checks"]}
    assert checks["retrieval"] == {
        "name": "retrieval",
        "ok": True,
        "detail": "lexical only: switched off (LORESTORE_SEMANTIC=off)",
    }
    recalled = cli.ok("recall", "--task", "postgresql")
    assert recalled["context"]["retrieval"].startswith("lexical:")
    monkeypatch.setenv("LORESTORE_SEMANTIC", "maybe")
    bad = cli("reindex", "--json")
    assert bad.exit_code == 1 and bad.error()["message"] == (
        "LORESTORE_SEMANTIC='maybe' is not on or off"
    )
