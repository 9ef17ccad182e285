"""No write path stores a credential: a value matching a secret pattern (core/secrets.py) is
refused as `invalid_value` naming the pattern, never what it matched, and changes nothing,
through the CLI, the stdio MCP server, REST and an import, on both backends; beside each
refusal a value that only says where a secret lives is stored (the control)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import Cli
from tests.migrating import pg_url
from tests.pg import Template
from tests.portable import header, lesson, line
from tests.serving import Api, error_of, make_api
from tests.stdio import Tools, run_mcp

S = "repo::acme/app"
# Built at run time, so this file holds no string a secret scanner would flag.
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5" * 4
SECRETS = {
    "github_token": f"CI pushes with {GITHUB_TOKEN} from the release job",
    "password_in_url": "the staging database is postgres://app:"
    + "hunter2" * 2
    + "@db.internal/app",
    "private_key_block": "deploy with -----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjE=",
}
CONTROL = "CI pushes with the token in $RELEASE_TOKEN (vault: ci/release); never paste it"


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "postgres":
        template: Template = request.getfixturevalue("pg_template")
        name = request.getfixturevalue("pg_database")
        monkeypatch.setenv("LORESTORE_DATABASE_URL", pg_url(template.app_url(name)))
    return str(request.param)


@pytest.fixture
def api(backend: str, home: Path) -> Iterator[Api]:
    yield from make_api(home)


@pytest.mark.parametrize("pattern", sorted(SECRETS))
def test_the_cli_refuses_a_secret_and_stores_nothing(cli: Cli, backend: str, pattern: str) -> None:
    refused = cli("write", S, "release", SECRETS[pattern], "--json")
    assert refused.exit_code == 2
    error = refused.error()
    assert error["code"] == "invalid_value" and error["details"] == {"secret": pattern}
    assert "hunter2" not in refused.stderr and GITHUB_TOKEN not in refused.stderr
    assert cli("read", S, "release", "--json").error()["code"] == "not_found"
    assert cli.ok("write", S, "release", CONTROL)["result"] == "created"


def test_a_loopback_database_url_is_a_local_default_not_a_secret(cli: Cli, backend: str) -> None:
    local = "integration tests need postgresql://app:app@localhost:5433/app_test up"
    assert cli.ok("write", S, "local-db", local)["lesson"]["value"] == local
    remote = local.replace("localhost", "db.staging.internal")
    refused = cli("write", S, "staging-db", remote, "--json").error()
    assert refused["details"] == {"secret": "password_in_url"}


def test_rest_refuses_a_secret_with_400(api: Api) -> None:
    write = {"scope": S, "key": "release", "value": SECRETS["github_token"]}
    error = error_of(api.post("memory_write", write), 400)
    assert error["code"] == "invalid_value" and error["details"] == {"secret": "github_token"}
    assert error_of(api.post("memory_read", {"scope": S, "key": "release"}), 404)
    assert api.ok("memory_write", {**write, "value": CONTROL})["result"] == "created"


def test_the_stdio_server_refuses_a_secret(home: Path) -> None:
    async def scenario(tools: Tools) -> None:
        error = await tools.error(
            "memory_write", scope=S, key="release", value=SECRETS["password_in_url"]
        )
        assert error["code"] == "invalid_value"
        assert error["details"] == {"secret": "password_in_url"}
        assert (await tools.error("memory_read", scope=S, key="release"))["code"] == "not_found"
        created = await tools.ok("memory_write", scope=S, key="release", value=CONTROL)
        assert created["result"] == "created"

    run_mcp(home, scenario)


def test_an_import_refuses_the_line_with_a_secret_and_exits_1(
    cli: Cli, backend: str, tmp_path: Path
) -> None:
    path = tmp_path / "f.jsonl"
    records = [lesson("release", SECRETS["github_token"]), lesson("docs", CONTROL)]
    path.write_bytes(b"".join(x + b"\n" for x in [header(), *map(line, records)]))
    done = cli("import", str(path), "--json")
    assert done.exit_code == 1
    result = done.json()
    assert result["lessons"]["added"] == 1 and result["invalid"] == 1
    assert [(p["code"], p["line"]) for p in result["problems"]] == [("invalid_record", 2)]
    assert "(github_token)" in result["problems"][0]["message"]
    assert GITHUB_TOKEN not in json.dumps(result)
    assert [x["key"] for x in cli.ok("list", S)["lessons"]] == ["docs"]
