"""Over MCP stdio: ``lorestore mcp`` on a copy of the loaded database, beside the bare SDK
server (the transport floor), both driven by the official SDK client; and startup, from
spawning a server to a completed handshake and first tools/list."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from rich.progress import Progress

from common import (
    HERE,
    VENV_BIN,
    Stats,
    Subjects,
    Workload,
    interleaved_async,
    server_env,
    step,
)
from inprocess import copy_db

PYTHON = VENV_BIN / "python"
IN_PROCESS = "lorestore call_tool in-process"


def lorestore_params(home: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=str(VENV_BIN / "lorestore"), args=["mcp"],
        env={"LORESTORE_HOME": str(home), "LORESTORE_SESSION": "bench-mcp", **server_env()},
    )  # fmt: skip


def bare_params(canned: Path | None = None) -> StdioServerParameters:
    env = server_env() | ({"BARE_MCP_CANNED": str(canned)} if canned else {})
    return StdioServerParameters(
        command=str(PYTHON), args=[str(HERE / "bare_mcp_server.py")], env=env
    )


async def _call(client: Client, name: str, args: dict[str, Any]) -> Any:
    result = await client.call_tool(name, args)
    if result.is_error:
        raise RuntimeError(f"{name} failed: {result.structured_content}")
    return result


async def _attribution(client: Client, op: str, result: Any) -> dict[str, Any]:
    """Size of one result on the wire, and what the SDK client spends validating it against
    the tool's output schema (it does so on every call_tool)."""
    n, t0 = 20, time.perf_counter_ns()
    for _ in range(n):
        await client.session.validate_tool_result(op, result)
    return {
        "result_bytes": len(result.model_dump_json(by_alias=True, exclude_none=True)),
        "client_schema_validation_ms": (time.perf_counter_ns() - t0) / n / 1e6,
    }


def _in_process(db: Path, home: Path) -> Any:
    """What ``lorestore mcp`` runs for one tool call, without the transport: the same
    ``call_tool`` (arguments parsed, git context filled, the operation, the result
    serialised) on a private copy of the same database, in this process."""
    from lorestore.auth.actor import local_actor
    from lorestore.cli.backend import with_git_context
    from lorestore.service import LessonService
    from lorestore.storage.sqlite import SQLiteStore
    from lorestore.transports.mcp.server import call_tool, local_invoker

    service = LessonService(SQLiteStore(copy_db(db, home / "in-process")), rate_limit=None)
    invoke = with_git_context(local_invoker(service, local_actor(session="bench-mcp")), os.getcwd())

    async def call(op: str, args: dict[str, Any]) -> Any:
        result = call_tool(invoke, op, args)
        if result.is_error:
            raise RuntimeError(f"{op} failed: {result.structured_content}")
        return result

    return call


async def _measure(
    work: Workload, ops: tuple[str, ...], prog: Progress, home: Path, db: Path
) -> list[Stats]:
    """Connect to lorestore, keep one of its results per tool (and the tool's output schema)
    for the canned variant of the bare server, then time the three servers, and the same
    calls in-process, call by call."""
    in_process = _in_process(db, home)
    canned_file = home / "canned.json"
    async with AsyncExitStack() as stack:
        lore = await stack.enter_async_context(Client(lorestore_params(home)))
        listed = await lore.list_tools()  # what a host does first; primes output schemas
        schemas = {t.name: t.output_schema for t in listed.tools}
        canned = {}
        for op in ops:  # a spare new lesson for the write, so no measured write is repeated
            args = work.calls(op, batch=1)[0] if op == "memory_write" else work.calls(op)[0]
            result = await _call(lore, op, args)
            canned[op] = {"result": result.structured_content, "output_schema": schemas[op]}
        canned_file.write_text(json.dumps(canned))
        clients = {
            "bare MCP floor": await stack.enter_async_context(Client(bare_params())),
            "lorestore mcp": lore,
            "bare MCP, lorestore results": await stack.enter_async_context(
                Client(bare_params(canned_file))
            ),
        }
        for client in clients.values():
            await client.list_tools()
        stats: list[Stats] = []
        for op in sorted(ops, key=lambda op: op == "memory_write"):  # writes last
            calls = work.calls(op)
            subjects: Subjects = {
                name: (lambda a, c=client, o=op: _call(c, o, a), calls)
                for name, client in clients.items()
            }
            subjects[IN_PROCESS] = (lambda a, o=op: in_process(o, a), calls)
            with step(prog, f"MCP {op} {work.size:,}", work.ops) as tick:
                samples = await interleaved_async(subjects, work.warmup, tick)
            for name, client in clients.items():
                extra = await _attribution(client, op, await _call(client, op, calls[-1]))
                stats.append(Stats("mcp", name, op, work.size, samples[name], extra))
            stats.append(Stats("mcp", IN_PROCESS, op, work.size, samples[IN_PROCESS]))
        stats += await _idle_effect(clients["bare MCP floor"], work, prog)
    return stats


async def _idle_effect(bare: Client, work: Workload, prog: Progress) -> list[Stats]:
    """The transport floor back to back and after 20 ms of idleness: a sleeping server and
    client take time to wake (interleaved calls, and real agents, pay some of that)."""
    calls, out = work.calls("memory_read"), []
    with step(prog, f"MCP idle effect {work.size:,}", 2 * work.ops) as tick:
        for label, pause in (("back to back", 0.0), ("after 20 ms idle", 0.02)):
            samples = []
            for args in calls:
                if pause:
                    await anyio.sleep(pause)
                t0 = time.perf_counter_ns()
                await _call(bare, "memory_read", args)
                samples.append(time.perf_counter_ns() - t0)
                tick()
            out.append(Stats("mcp", f"bare MCP floor, {label}", "memory_read", work.size,
                             samples[work.warmup :]))  # fmt: skip
    return out


def run(work: Workload, prog: Progress, ops: tuple[str, ...], db: Path) -> list[Stats]:
    """Time lorestore on a private copy of ``db`` (the cached load) beside the bare floor and
    the bare server returning lorestore's results (which splits SDK cost from lorestore's)."""
    with tempfile.TemporaryDirectory(prefix="lorestore-mcp-") as tmp:
        home = Path(tmp)
        copy_db(db, home)
        return anyio.run(_measure, work, ops, prog, home, db)


async def _startup_once(params: StdioServerParameters) -> tuple[int, int]:
    t0 = time.perf_counter_ns()
    async with Client(params) as client:
        t1 = time.perf_counter_ns()
        await client.list_tools()
        t2 = time.perf_counter_ns()
    return t1 - t0, t2 - t0


def _median_ms(values: list[int]) -> float:
    return statistics.median(values) / 1e6


def _command_ns(argv: list[str]) -> int:
    t0 = time.perf_counter_ns()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter_ns() - t0


def startup(prog: Progress, runs: int, db: Path | None, size: int | None) -> dict[str, Any]:
    """Median time to a completed handshake, and to the first tools/list, over ``runs`` spawns
    of each server, alternated, after one untimed round (warm .pyc files and page cache);
    beside them, plain interpreter start and the two import trees, each run to exit."""
    out: dict[str, Any] = {"runs": runs, "db_size": size or 0}
    commands = {
        name: [str(PYTHON), "-c", code]
        for name, code in (("python -c pass", "pass"),
                           ("import mcp.server.stdio", "import mcp.server.stdio"),
                           ("import lorestore.cli.main", "import lorestore.cli.main"))
    }  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="lorestore-start-") as tmp:
        home = Path(tmp)
        if db is not None:
            copy_db(db, home)
        servers = {"lorestore mcp": lorestore_params(home), "bare MCP floor": bare_params()}
        times: dict[str, list[tuple[int, int]]] = {name: [] for name in servers}
        ran: dict[str, list[int]] = {name: [] for name in commands}
        with step(prog, "startup", runs + 1) as tick:
            for i in range(runs + 1):
                for name in list(servers) if i % 2 else list(servers)[::-1]:
                    times[name].append(anyio.run(_startup_once, servers[name]))
                for name, argv in commands.items():
                    ran[name].append(_command_ns(argv))
                tick()
    for name, pairs in times.items():
        handshake, listed = [p[0] for p in pairs[1:]], [p[1] for p in pairs[1:]]
        out[name] = {
            "handshake_ms": _median_ms(handshake), "first_list_ms": _median_ms(listed),
            "handshake_samples_ms": [round(x / 1e6, 1) for x in handshake],
            "first_list_samples_ms": [round(x / 1e6, 1) for x in listed],
        }  # fmt: skip
    for name, samples in ran.items():
        out[name] = {"median_ms": _median_ms(samples[1:])}
    return out
