"""Remote mode: with LORESTORE_URL and LORESTORE_TOKEN the CLI and ``lorestore mcp`` work on a
real server through its REST API, with the same commands, the same output byte for byte and
the same exit codes as on the server's store locally."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from tests.conftest import Cli, CliResult
from tests.gitrepo import make_work_tree
from tests.serving import EXE, Server, base_env

from lorestore.auth.actor import local_actor
from lorestore.composition import build_service
from lorestore.config import load_settings
from lorestore.models import TokenCreateParams

pytestmark = pytest.mark.slow
S = "repo::acme/app"


class Both:
    """Runs a CLI command against the server (remote) and on its store directly (local)."""

    def __init__(self, cli: Cli, server: Server, token: str, monkeypatch: pytest.MonkeyPatch):
        self.cli = cli
        self.server = server
        self.token = token
        self.monkeypatch = monkeypatch

    def remote(self, *args: str, token: str | None = None) -> CliResult:
        with self.monkeypatch.context() as env:
            env.setenv("LORESTORE_URL", self.server.url)
            env.setenv("LORESTORE_TOKEN", token or self.token)
            return self.cli(*args)

    def local(self, *args: str) -> CliResult:
        return self.cli(*args)

    def same(self, *args: str) -> CliResult:
        remote, local = self.remote(*args), self.local(*args)
        assert (remote.exit_code, remote.stdout, remote.stderr) == (
            local.exit_code,
            local.stdout,
            local.stderr,
        ), args
        return remote


@pytest.fixture
def both(home: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> Iterator[Both]:
    service = build_service(load_settings())
    token = service.token_create(
        local_actor(), TokenCreateParams(name="laptop", permission="admin")
    )  # type: ignore[call-arg]
    service.store.close()
    server = Server(home, "--no-admin-token")
    yield Both(cli, server, token.token, monkeypatch)
    server.stop()


def test_cli_output_and_exit_codes_match_local(both: Both) -> None:
    written = both.remote(
        "write", S, "pg", "Integration tests need Postgres", "--tag", "db", "--json"
    )
    assert written.exit_code == 0, written.stderr
    assert both.remote("write", S, "ci", "CI caches Postgres", "--json").exit_code == 0
    assert both.remote("archive", S, "ci", "--json").exit_code == 0
    read = both.same("read", S, "pg", "--json")
    assert read.json()["lesson"] == written.json()["lesson"]
    both.same("read", S, "pg")  # the human rendering too
    for args in (
        ("history", S, "pg", "--json"),
        ("list", S, "--json"),
        ("list", S, "--tag", "db"),
        ("search", "postgres", "-s", S, "--json"),
        ("scopes", "--json"),
        ("audit", "--scope", S, "--json"),
        ("review-queue", "--json"),
    ):
        assert both.same(*args).exit_code == 0, args
    # Errors: the same code, hint, stderr and exit status.
    assert both.same("read", S, "ci", "--json").exit_code == 1
    assert both.same("read", S, "nope", "--json").error()["code"] == "not_found"
    bad = both.same("write", "repo:acme/app", "k", "v", "--json")
    assert bad.exit_code == 2 and bad.error()["code"] == "invalid_scope"
    assert both.same("list", S, "--limit", "0", "--json").exit_code == 2
    conflict = both.same("write", S, "pg", "other", "--if-version", "9", "--json")
    assert conflict.exit_code == 1 and conflict.error()["code"] == "version_conflict"
    both.same("read", S, "nope")  # human error output


def test_remote_commands_act_with_the_tokens_rights(both: Both) -> None:
    reader = both.remote("token", "create", "--name", "ro", "--permission", "read", "--json")
    token = reader.json()["token"]
    refused = both.remote("write", S, "k", "v", "--json", token=token)
    assert refused.exit_code == 1 and refused.error()["code"] == "forbidden"
    assert both.remote("write", S, "k", "v", "--json").exit_code == 0
    assert both.remote("read", S, "k", "--json", token=token).json()["lesson"]["value"] == "v"
    wrong = both.remote("scopes", "--json", token="lst_" + "C" * 43)
    assert wrong.exit_code == 1 and wrong.error()["code"] == "unauthenticated"


def test_remote_configuration_errors(both: Both, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORESTORE_URL", both.server.url)
    missing = both.cli("scopes", "--json")
    assert missing.exit_code == 1 and missing.error()["code"] == "config_error"
    monkeypatch.setenv("LORESTORE_TOKEN", both.token)
    maintain = both.cli("maintain", "--json")
    assert maintain.exit_code == 1 and "server" in maintain.error()["hint"]
    monkeypatch.setenv("LORESTORE_URL", "http://127.0.0.1:9")  # nothing listens on discard
    down = both.cli("scopes", "--json")
    assert down.exit_code == 1 and "cannot reach" in down.error()["message"]
    monkeypatch.setenv("LORESTORE_URL", both.server.url)
    assert both.cli("scopes", "--json").exit_code == 0


@pytest.fixture
def work_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_work_tree(tmp_path, monkeypatch)


def run_remote_mcp(both: Both, scenario: Any, cwd: Path | None = None) -> None:
    """``lorestore mcp`` bridging to the server with an agent's write token (a person's
    admin token is refused: tests/e2e/test_person_credential.py)."""
    made = both.remote("token", "create", "--name", "agent", "--permission", "write", "--json")
    agent = made.json()["token"]
    env = base_env(Path(os.devnull), LORESTORE_URL=both.server.url, LORESTORE_TOKEN=agent)
    env.pop("LORESTORE_HOME")  # remote mode needs no local store at all
    params = StdioServerParameters(command=EXE, args=["mcp"], env=env, cwd=cwd)

    async def main() -> None:
        async with Client(params) as client:
            await scenario(client)

    anyio.run(main)


def test_lorestore_mcp_in_remote_mode(both: Both) -> None:
    results: dict[str, Any] = {}

    async def first(client: Client) -> None:
        for _ in range(2):
            written = await client.call_tool(
                "memory_write", {"scope": S, "key": "k", "value": "remote lesson"}
            )
            results.setdefault("writes", []).append(written.structured_content)
        read = await client.call_tool("memory_read", {"scope": S, "key": "k"})
        results["read"] = read.structured_content
        bad = await client.call_tool("memory_read", {"scope": "repo:acme/app", "key": "k"})
        results["bad"] = (bad.is_error, bad.structured_content)

    async def second(client: Client) -> None:
        again = await client.call_tool(
            "memory_write", {"scope": S, "key": "k", "value": "remote lesson"}
        )
        results["second"] = again.structured_content

    run_remote_mcp(both, first)
    run_remote_mcp(both, second)
    assert results["read"]["lesson"] == results["writes"][1]["lesson"]
    assert results["second"]["lesson"] == both.local("read", S, "k", "--json").json()["lesson"]
    # One `lorestore mcp` process is one agent session, remotely as locally.
    assert [w["result"] for w in results["writes"]] == ["created", "seen"]
    assert results["writes"][1]["lesson"]["seen_count"] == 1
    assert results["second"]["lesson"]["seen_count"] == 2
    assert results["read"]["lesson"]["source"]["session"].startswith("mcp-")
    is_error, body = results["bad"]
    assert is_error and body["error"]["code"] == "invalid_scope"


def test_remote_recall_checks_depends_on_files_with_local_git(both: Both, work_tree: Path) -> None:
    """The server cannot read the client's files: the client hashes the files a held lesson
    depends on and asks again, so an unchanged file offers the lesson and a changed one holds
    it, as locally."""
    scope = "repo::example/app"
    assert both.remote("policy", scope, "--revision-policy", "files", "--json").exit_code == 0
    written = both.remote(
        "write", scope, "test-db", "Tests need Postgres.", "--depends-on", "tests/conftest.py"
    )
    assert written.exit_code == 0, written.stderr
    unchanged = both.remote("recall", "--json").json()
    assert [o["lesson"]["key"] for o in unchanged["offered"]] == ["test-db"]
    assert "files_unchanged" in unchanged["offered"][0]["reasons"]
    results: dict[str, Any] = {}

    async def agent(client: Client) -> None:
        recalled = await client.call_tool("memory_recall", {"task": "run the tests"})
        results["recall"] = recalled.structured_content

    run_remote_mcp(both, agent, cwd=work_tree)
    assert [o["lesson"]["key"] for o in results["recall"]["offered"]] == ["test-db"]
    (work_tree / "tests" / "conftest.py").write_text("DATABASE = 'sqlite'\n")
    changed = both.remote("recall", "--json").json()
    assert changed["offered"] == []
    assert changed["held"][0]["reasons"] == ["file_changed:tests/conftest.py"]
    (work_tree / "tests" / "conftest.py").unlink()
    gone = both.remote("recall", "--json").json()
    assert gone["held"][0]["reasons"] == ["file_changed:tests/conftest.py"]


def test_a_remote_import_prints_the_problems_a_local_one_does(both: Both, tmp_path: Path) -> None:
    good = (
        '{"type":"lesson","id":"11111111-1111-4111-8111-00000000000%d","scope":"global",'
        '"key":"k%d","value":"v%d","version":1,"recorded_at":"2026-01-01T00:00:00Z",'
        '"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}'
    )
    source = tmp_path / "mixed.jsonl"
    source.write_text("\n".join([good % (1, 1, 1), "{not json", good % (2, 2, 2)]) + "\n")
    result = both.same("import", str(source), "--dry-run")  # stdout, stderr, exit alike
    assert "invalid_record" in result.stderr and "line 2" in result.stderr


def test_remote_mode_carries_a_non_ascii_agent_and_refuses_a_control_character(
    both: Both, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LORESTORE_URL", both.server.url)
    monkeypatch.setenv("LORESTORE_TOKEN", both.token)
    monkeypatch.setenv("LORESTORE_AGENT", "clāude")
    written = both.cli("write", S, "agent", "v", "--json")
    assert written.exit_code == 0, written.stderr
    assert written.json()["lesson"]["source"]["agent"] == "clāude"  # as local mode stores it
    monkeypatch.setenv("LORESTORE_AGENT", "bad\r\nX-Injected: 1")
    refused = both.cli("write", S, "agent2", "v", "--json")
    assert refused.exit_code == 1 and refused.error()["code"] == "config_error"
    assert "LORESTORE_AGENT" in refused.error()["message"]


def test_deeply_nested_json_is_bad_input_everywhere(both: Both, tmp_path: Path) -> None:
    from lorestore.transports.mcp.stdio import mend_line

    deep = "[" * 5000 + '"\\ud83d"' + "]" * 5000
    assert mend_line(deep) == deep  # left to the SDK, which drops it; the server lives on
    response = httpx2.post(
        f"{both.server.url}/api/v1/memory_write",
        content=deep,
        headers={"Authorization": f"Bearer {both.token}"},
    )
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_argument"
    good = json.dumps(
        {
            "type": "lesson",
            "id": str(uuid.uuid4()),
            "scope": S,
            "key": "ok",
            "value": "lands",
            "version": 1,
            "recorded_at": "2026-01-01T00:00:00Z",
            "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
        }
    )
    header = json.dumps(
        {
            "format": "lorestore-jsonl",
            "version": 1,
            "exported_at": "2026-01-01T00:00:00Z",
            "source": {},
        }
    )
    path = tmp_path / "deep.jsonl"
    path.write_text(f"{header}\n{'[' * 5000}{']' * 5000}\n{good}\n")
    result = both.cli("import", str(path), "--json")
    assert result.exit_code == 1 and result.json()["invalid"] == 1  # the line, named
    assert result.json()["lessons"]["added"] == 1  # and the rest lands
