"""The MCP server as a host sees it: ``lorestore mcp`` spawned as a real process and driven by
the official SDK client over stdio."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from tests.conftest import Cli
from tests.stdio import EXE, Tools, run_mcp

from lorestore.operations import on_surface
from lorestore.transports.mcp.server import tool_definitions

S = "repo::acme/app"


def test_tools_are_the_catalog_with_schemas(home: Path) -> None:
    """The stdio agent is listed the catalog's tools it may call (read and write), not the
    review and admin ones it would only be refused; those stay refused when called."""
    agents = [op.name for op in on_surface("mcp") if op.permission in ("read", "write")]

    async def scenario(tools: Tools) -> None:
        listed = (await tools.client.list_tools()).tools
        assert [t.name for t in listed] == agents
        by_name = {t.name: t for t in listed}
        write = by_name["memory_write"]
        assert set(write.input_schema["required"]) == {"scope", "key", "value"}
        assert write.output_schema and "lesson" in write.output_schema["properties"]
        assert by_name["memory_read"].annotations.read_only_hint is True  # type: ignore[union-attr]
        assert not {"memory_verify", "memory_reject", "memory_delete"} & set(by_name)
        await tools.ok("memory_write", scope=S, key="k", value="v")
        refused = await tools.error("memory_verify", scope=S, key="k")
        assert refused["code"] == "forbidden"

    run_mcp(home, scenario)
    every = {t.name: t for t in tool_definitions()}
    assert list(every) == [op.name for op in on_surface("mcp")]
    assert every["memory_delete"].annotations.destructive_hint is True  # type: ignore[union-attr]


def test_structured_results_equal_the_cli_json(home: Path, cli: Cli) -> None:
    captured: dict[str, Any] = {}

    async def scenario(tools: Tools) -> None:
        await tools.ok(
            "memory_write",
            scope=S,
            key="pg",
            value="Use the local Postgres",
            tags=["db"],
            source={"commit": "abc1234"},
        )
        captured["read"] = await tools.ok("memory_read", scope=S, key="pg")
        captured["search"] = await tools.ok("memory_search", query="postgres", scopes=[S])
        captured["history"] = await tools.ok("memory_history", scope=S, key="pg")

    run_mcp(home, scenario)
    assert captured["read"] == cli.ok("read", S, "pg")
    assert captured["search"] == cli.ok("search", "postgres", "-s", S)
    assert captured["history"] == cli.ok("history", S, "pg")


def test_errors_are_tool_errors_with_codes(home: Path) -> None:
    async def scenario(tools: Tools) -> None:
        bad = await tools.error("memory_write", scope="repo:acme/app", key="k", value="v")
        assert bad["code"] == "invalid_scope"
        assert bad["hint"] == 'use "::" as the separator: "repo::acme/app"'
        assert (await tools.error("memory_read", scope=S, key="k", extra=1))["code"] == (
            "invalid_argument"
        )
        assert (await tools.error("memory_read", scope=S, key="nope"))["code"] == "not_found"
        assert (await tools.error("no_such_tool"))["code"] == "invalid_argument"
        # None of the refused calls stored anything.
        assert (await tools.ok("memory_scopes"))["scopes"] == []

    run_mcp(home, scenario)


def test_never_returned_rules_with_positive_controls(home: Path, cli: Cli) -> None:
    cli.ok("write", S, "kept", "kept postgres lesson")
    cli.ok("write", S, "archived", "archived postgres lesson")
    cli.ok("write", S, "deleted", "deleted postgres lesson")
    cli.ok("write", "repo::acme/other", "elsewhere", "postgres lesson of another repo")
    cli.ok("archive", S, "archived")
    cli.ok("delete", S, "deleted")

    async def scenario(tools: Tools) -> None:
        assert (await tools.ok("memory_read", scope=S, key="kept"))["lesson"]["key"] == "kept"
        for key in ("archived", "deleted", "elsewhere"):
            assert (await tools.error("memory_read", scope=S, key=key))["code"] == "not_found"
        listed = await tools.ok("memory_list", scope=S)
        assert [x["key"] for x in listed["lessons"]] == ["kept"]
        hits = await tools.ok("memory_search", query="postgres lesson", scopes=[S])
        assert [h["lesson"]["key"] for h in hits["hits"]] == ["kept"]
        missing_scope = await tools.error("memory_search", query="postgres", scopes=[])
        assert missing_scope["code"] == "invalid_scope"

    run_mcp(home, scenario)


def test_one_server_process_is_one_session(home: Path) -> None:
    """Repeated writes of a value from one agent session count once; another server counts."""

    async def first(tools: Tools) -> None:
        await tools.ok("memory_write", scope=S, key="k", value="same lesson")
        again = await tools.ok("memory_write", scope=S, key="k", value="Same  lesson")
        assert (again["result"], again["lesson"]["seen_count"]) == ("seen", 1)

    async def second(tools: Tools) -> None:
        other = await tools.ok("memory_write", scope=S, key="k", value="same lesson")
        assert (other["result"], other["lesson"]["seen_count"]) == ("seen", 2)

    run_mcp(home, first)
    run_mcp(home, second)


def _announce(cwd: Path | None = None, **env: str) -> Any:
    """`lorestore mcp --announce` with stdin closed, under these LORESTORE_ settings alone."""
    import subprocess

    clean = {k: v for k, v in os.environ.items() if not k.startswith("LORESTORE_")}
    return subprocess.run(
        [EXE, "mcp", "--announce"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        cwd=cwd,
        env={**clean, **env},
    )


def test_announce_says_how_to_connect_and_ends_at_eof(home: Path) -> None:
    done = _announce(LORESTORE_HOME=str(home))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # stdout is the protocol channel
    # For the user, not only the folder the command is typed in (Claude Code's default).
    assert "claude mcp add --scope user lorestore" in done.stderr and str(home) in done.stderr
    # The setting that chose this store travels with each host's command.
    lines = done.stderr.splitlines()
    (claude,) = [x for x in lines if "claude mcp add" in x]
    (codex,) = [x for x in lines if "codex mcp add" in x]
    (cursor,) = [x for x in lines if "mcp.json" in x]
    assert f"-e LORESTORE_HOME={home} --" in claude
    assert f"--env LORESTORE_HOME={home} --" in codex
    config = json.loads(cursor.split("-> ", 1)[1])
    assert config["mcpServers"]["lorestore"]["env"] == {"LORESTORE_HOME": str(home)}
    # A relative home is made absolute (a host starts elsewhere); a password is never shown.
    relative = _announce(home.parent, LORESTORE_HOME=home.name)
    assert f"-e LORESTORE_HOME={home.resolve()} --" in relative.stderr
    secret = "postgresql://lorestore:s3cret@127.0.0.1:1/db"
    masked = _announce(LORESTORE_HOME=str(home), LORESTORE_DATABASE_URL=secret)
    assert "lorestore:<password>@127.0.0.1:1/db" in masked.stderr
    assert "s3cret" not in masked.stderr


def test_a_store_file_deleted_under_the_server_refuses_writes(home: Path, cli: Cli) -> None:
    """SQLite keeps writing to a deleted file it has open, and every write would vanish with
    the process: the server refuses them instead, and a fresh start opens the new file."""

    async def scenario(tools: Tools) -> None:
        await tools.ok("memory_write", scope="global", key="before", value="Lands.")  # control
        for suffix in ("", "-wal", "-shm"):
            (home / f"lorestore.db{suffix}").unlink(missing_ok=True)
        error = await tools.error("memory_write", scope="global", key="after", value="Lost?")
        assert error["code"] == "storage_error" and "restart" in error["hint"]

    run_mcp(home, scenario)
    assert cli.ok("write", "global", "after", "Lands in the new file.")["result"] == "created"
    assert cli("read", "global", "before", "--json").error()["code"] == "not_found"


_INITIALIZE = (
    json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        }
    ).encode()
    + b"\n"
)


def test_ctrl_c_stops_the_stdio_server(tmp_path: Path) -> None:
    """SIGINT ends `lorestore mcp` at once (it was caught and ignored while the server waited
    for the host's next line); closing stdin, the control, ends it too."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORESTORE_")}
    env["LORESTORE_HOME"] = str(tmp_path)
    for stop in ("sigint", "eof"):
        child = subprocess.Popen(
            [EXE, "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        # Serving, waiting for the host: it has answered an initialize (a fixed sleep sent the
        # signal while a loaded machine was still importing, before Python's handler).
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(_INITIALIZE)
        child.stdin.flush()
        assert b'"result"' in child.stdout.readline()
        if stop == "sigint":
            child.send_signal(signal.SIGINT)
        child.communicate(timeout=20)  # closes stdin: the end of input for "eof"
        assert child.returncode == (130 if stop == "sigint" else 0), stop


def test_at_a_terminal_it_says_it_waits_for_a_client(home: Path) -> None:
    """Typed at a terminal, `lorestore mcp` said nothing and looked hung; piped (a host), it
    still writes nothing but the protocol."""
    import pty
    import subprocess

    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORESTORE_")}
    process = subprocess.Popen(
        [EXE, "mcp"],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**env, "LORESTORE_HOME": str(home)},
    )
    os.close(follower)
    try:
        os.write(leader, b"\x04")  # Ctrl-D: the end of input, once the server reads
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
        os.close(leader)
    assert out == b""  # stdout stays the protocol's
    assert err.decode().startswith("lorestore MCP server on stdio")
    assert "Waiting for an MCP client on stdin" in err.decode()
    piped = _announce(LORESTORE_HOME=str(home)).stderr
    assert "Waiting for an MCP client" in piped  # --announce, the control, says it too


def test_a_server_started_outside_a_checkout_takes_its_git_context_from_the_roots(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hosts may start stdio servers in the home folder: recall then knew no repository and
    silently left out every repository lesson. The client's roots name the work tree; without
    them (the control) the answer says that no repository was known."""
    import mcp_types as types
    from tests.gitrepo import make_work_tree

    tree = make_work_tree(tmp_path, monkeypatch)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"LORESTORE_HOME": str(home), "PATH": os.environ.get("PATH", "")}
    params = StdioServerParameters(command=EXE, args=["mcp"], env=env, cwd=str(elsewhere))
    seen: dict[str, Any] = {}

    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=tree.as_uri(), name="app")])

    async def main() -> None:
        # The handshake protocol, as hosts speak it today: roots are deprecated from 2026-07-28.
        async with Client(params, list_roots_callback=roots, mode="legacy") as client:
            seen["rooted"] = (await client.call_tool("memory_recall", {})).structured_content
        async with Client(params) as client:
            seen["bare"] = (await client.call_tool("memory_recall", {})).structured_content

    anyio.run(main)
    assert seen["rooted"]["context"]["repo"] == "example/app"
    assert seen["rooted"]["context"]["branch"] == "main"
    assert "no repository was known" not in seen["rooted"]["text"]
    assert seen["bare"]["context"]["repo"] is None
    assert "no repository was known" in seen["bare"]["text"]
