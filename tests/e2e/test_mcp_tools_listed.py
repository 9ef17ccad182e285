"""Agents see only the tools they can use: over streamable HTTP a token is listed the tools
its permission may call (a write token no review or admin tools, a read token no writes),
an admin token every tool; a tool left off the list is still refused when called. The stdio
agent's list is in tests/e2e/test_mcp.py; the remote bridge's, below."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from tests.serving import EXE, Server, base_env, mcp_client

from lorestore.auth.actor import local_actor
from lorestore.composition import build_service
from lorestore.config import load_settings
from lorestore.models import TokenCreateParams
from lorestore.operations import on_surface

pytestmark = pytest.mark.slow
PERMISSIONS = ("read", "write", "review", "admin")
LEVEL = {p: i for i, p in enumerate(PERMISSIONS)}


def expected(permission: str) -> list[str]:
    return [op.name for op in on_surface("mcp") if LEVEL[op.permission] <= LEVEL[permission]]


@pytest.fixture
def served(home: Path) -> Iterator[tuple[Server, dict[str, str]]]:
    service = build_service(load_settings())
    tokens = {
        p: service.token_create(
            local_actor(), TokenCreateParams.model_validate({"name": p, "permission": p})
        ).token
        for p in PERMISSIONS
    }
    service.store.close()
    server = Server(home, "--no-admin-token")
    yield server, tokens
    server.stop()


def test_each_token_is_listed_the_tools_it_may_call(served: tuple[Server, dict[str, str]]) -> None:
    server, tokens = served
    listed: dict[str, list[str]] = {}
    refusals: dict[str, str] = {}

    async def main() -> None:
        for permission, token in tokens.items():
            async with mcp_client(server.url, token) as client:
                listed[permission] = [t.name for t in (await client.list_tools()).tools]
                if permission == "write":
                    result = await client.call_tool(
                        "memory_delete", {"scope": "global", "key": "k"}
                    )
                    assert result.is_error and result.structured_content is not None
                    refusals[permission] = result.structured_content["error"]["code"]

    anyio.run(main)
    for permission in PERMISSIONS:
        assert listed[permission] == expected(permission), permission
    assert "memory_write" not in listed["read"] and "memory_verify" not in listed["write"]
    assert "memory_verify" in listed["review"] and "memory_delete" not in listed["review"]
    assert listed["admin"] == [op.name for op in on_surface("mcp")]  # the control: every tool
    assert refusals["write"] == "forbidden"  # unlisted is still refused, not just hidden


def test_the_remote_bridge_lists_what_its_token_may_call(
    served: tuple[Server, dict[str, str]], tmp_path: Path
) -> None:
    server, tokens = served
    names: dict[str, list[str]] = {}
    for permission, args in (("read", []), ("write", []), ("admin", ["--allow-person-token"])):
        env = base_env(tmp_path / "laptop", LORESTORE_URL=server.url)
        env["LORESTORE_TOKEN"] = tokens[permission]
        params = StdioServerParameters(command=EXE, args=["mcp", *args], env=env, cwd=os.getcwd())

        async def main(
            params: StdioServerParameters = params, permission: str = permission
        ) -> None:
            async with Client(params) as client:
                names[permission] = [t.name for t in (await client.list_tools()).tools]

        anyio.run(main)
    assert names == {p: expected(p) for p in ("read", "write", "admin")}
