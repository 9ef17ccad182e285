"""A person's credential never reaches an agent: ``lorestore login`` keeps it for the CLI in a
0600 file (not in the environment every agent host hands to its stdio servers), ``lorestore
mcp`` never reads that file and refuses to bridge with a review or admin token unless told
to, and the server's banner never suggests exporting the admin token. Through the real
``lorestore`` process, a real server and the MCP SDK's stdio client."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from tests.serving import EXE, Server, base_env

from lorestore.auth.actor import local_actor
from lorestore.composition import build_service
from lorestore.config import load_settings
from lorestore.core.errors import LorestoreError
from lorestore.models import ReadParams, TokenCreateParams

pytestmark = pytest.mark.slow
S = "repo::acme/app"


@dataclass
class Team:
    server: Server
    tokens: dict[str, str]  # permission -> a token of user:local with it
    laptop: Path  # a person's LORESTORE_HOME on another machine: its own local store

    def run(self, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [EXE, *args],
            input=stdin,
            env=base_env(self.laptop, **env),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def on_server(self, key: str) -> str | None:
        """The value at S/key on the server's store, read there directly."""
        service = build_service(load_settings(base_env(self.server.home)))
        try:
            params = ReadParams.model_validate({"scope": S, "key": key})
            return service.memory_read(local_actor(), params).lesson.value
        except LorestoreError as error:
            assert error.code == "not_found"
            return None
        finally:
            service.store.close()


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    home = tmp_path / "server"
    service = build_service(load_settings(base_env(home)))
    tokens = {
        permission: service.token_create(
            local_actor(),
            TokenCreateParams.model_validate({"name": permission, "permission": permission}),
        ).token
        for permission in ("write", "review", "admin")
    }
    service.store.close()
    server = Server(home, "--no-admin-token")
    yield Team(server, tokens, tmp_path / "laptop")
    server.stop()


def test_login_keeps_the_token_in_a_private_file_and_the_cli_uses_it(team: Team) -> None:
    url = team.server.url
    logged = team.run("login", url, stdin=team.tokens["admin"] + "\n")
    assert logged.returncode == 0, logged.stderr
    assert "as user:local (admin token)" in logged.stdout
    assert team.tokens["admin"] not in logged.stdout + logged.stderr
    path = team.laptop / "credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(team.laptop.stat().st_mode) == 0o700  # the home login created
    # Without LORESTORE_URL, commands now run on the server, with the person's rights.
    assert team.run("write", S, "k", "from the laptop").returncode == 0
    assert team.on_server("k") == "from the laptop"
    assert team.run("verify", S, "k").returncode == 0
    # Logged out, the same command works on the laptop's own store again.
    out = team.run("logout")
    assert out.returncode == 0 and "removed" in out.stdout and not path.exists()
    assert team.run("write", S, "k2", "on the laptop").returncode == 0
    assert team.on_server("k2") is None
    again = team.run("logout")
    assert again.returncode == 0 and "Not logged in" in again.stdout


def test_login_refuses_a_token_the_server_does_not_know_and_keeps_nothing(team: Team) -> None:
    wrong = team.run("login", team.server.url, "--json", stdin="lst_" + "C" * 43 + "\n")
    assert wrong.returncode == 1, wrong.stdout
    assert '"unauthenticated"' in wrong.stderr
    assert not (team.laptop / "credentials.json").exists()
    bad_url = team.run("login", "127.0.0.1:8765", stdin=team.tokens["admin"])
    assert bad_url.returncode == 2 and "not a server URL" in bad_url.stderr
    empty = team.run("login", team.server.url, stdin="\n")
    assert empty.returncode == 2 and "no token" in empty.stderr
    assert team.run("login", team.server.url, stdin=team.tokens["admin"]).returncode == 0


def _mcp(team: Team, scenario: Any, *args: str, **env: str) -> None:
    params = StdioServerParameters(
        command=EXE, args=["mcp", *args], env=base_env(team.laptop, **env)
    )

    async def main() -> None:
        async with Client(params) as client:
            await scenario(client)

    anyio.run(main)


async def _write(client: Client, key: str) -> None:
    result = await client.call_tool("memory_write", {"scope": S, "key": key, "value": key})
    assert not result.is_error, result.structured_content


def test_mcp_never_bridges_with_the_login_credential(team: Team) -> None:
    assert team.run("login", team.server.url, stdin=team.tokens["admin"]).returncode == 0

    async def scenario(client: Client) -> None:
        await _write(client, "from-mcp")
        verify = await client.call_tool("memory_verify", {"scope": S, "key": "from-mcp"})
        assert verify.is_error  # the stdio agent acts as an agent on the local store

    _mcp(team, scenario)
    assert team.on_server("from-mcp") is None
    # Positive control: the person's CLI, logged in, reads the server.
    assert team.run("read", S, "from-mcp").returncode == 1


@pytest.mark.parametrize("permission", ["review", "admin"])
def test_mcp_refuses_a_persons_token_from_the_environment(team: Team, permission: str) -> None:
    env = {"LORESTORE_URL": team.server.url, "LORESTORE_TOKEN": team.tokens[permission]}
    refused = team.run("mcp", **env)
    assert refused.returncode == 1
    assert f"a {permission} token (a person's credential)" in refused.stderr
    assert "--permission write" in refused.stderr and "--allow-person-token" in refused.stderr
    # Told explicitly, it bridges with it.
    _mcp(
        team, lambda client: _write(client, f"allowed-{permission}"), "--allow-person-token", **env
    )
    assert team.on_server(f"allowed-{permission}") == f"allowed-{permission}"


def test_mcp_bridges_with_an_agents_write_token(team: Team) -> None:
    env = {"LORESTORE_URL": team.server.url, "LORESTORE_TOKEN": team.tokens["write"]}

    async def scenario(client: Client) -> None:
        await _write(client, "agent")
        current = await client.call_tool("token_current", {})
        assert current.structured_content is not None
        assert current.structured_content["permission"] == "write"
        assert current.structured_content["is_person"] is False

    _mcp(team, scenario, **env)
    assert team.on_server("agent") == "agent"


def test_the_first_start_banner_never_suggests_exporting_the_admin_token(tmp_path: Path) -> None:
    server = Server(tmp_path / "fresh")
    assert server.stop() == 0
    (token,) = set(re.findall(r"lst_[A-Za-z0-9_-]{20,}", server.stdout))
    for line in server.stdout.splitlines():  # the variable is named for an agent's token only
        assert "LORESTORE_TOKEN" not in line or token not in line
    assert "export LORESTORE_TOKEN=<the agent's write token>" in server.stdout
    assert f"lorestore login {server.url}" in server.stdout
    assert server.stdout.count(token) == 1  # shown once, on a line of its own
    assert os.environ.get("LORESTORE_TOKEN") != token
