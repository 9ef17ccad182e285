"""Bounded load test of ``lorestore serve`` on loopback, on the embedded store (or on
PostgreSQL with --database-url), in three phases against one server: one client reading on
one reused connection (``one``: the latency a remote-mode tool call pays), 16 concurrent
clients reading (``reads``), and 16 clients mixing writes and searches (``mixed``). Each
client has its own write token (one agent per token). A fixed number of requests and a time
limit per phase; reports throughput, p50/p95/p99 per kind, the error count, which must be
zero, and the server's CPU time (user + system, from /proc, its worker processes included)
per request: on a machine whose cores the load generator shares, the figure its load disturbs
least.

    .venv/bin/python benchmarks/load_http.py                     # all three phases
    .venv/bin/python benchmarks/load_http.py --phases one,reads  # some of them
    .venv/bin/python benchmarks/load_http.py --json              # machine-readable
    .venv/bin/python benchmarks/load_http.py --postgres URL      # PostgreSQL (the app role)
    .venv/bin/python benchmarks/load_http.py --client raw        # a lighter load generator
    .venv/bin/python benchmarks/load_http.py --workers 2         # serve --workers 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from lorestore.auth.actor import local_actor
from lorestore.composition import build_service
from lorestore.config import load_settings
from lorestore.models import TokenCreateParams, WriteParams

HOST = "127.0.0.1"  # loopback only, by design
EXE = Path(sys.executable).parent / "lorestore"
SCOPES = [f"repo::bench/app{i}" for i in range(8)]
# fmt: off
WORDS = [
    "postgres", "migration", "fixture", "flaky", "cache", "docker", "timeout", "retry",
    "index", "schema", "deploy", "branch", "commit", "token", "budget", "recall",
    "search", "lesson", "review", "verify", "reject", "archive",
]
# fmt: on


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(
        default_factory=lambda: {"read": [], "write": [], "search": []}
    )
    errors: list[str] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def prepare(env: dict[str, str], clients: int, seed_lessons: int) -> list[str]:
    """Seed the store and mint one write token per client, before the server starts."""
    service = build_service(load_settings(env))
    service.rate_limit = None
    person, rng = local_actor(session="bench-seed"), random.Random(7)
    for i in range(seed_lessons):
        params = {"scope": SCOPES[i % len(SCOPES)], "key": f"seed-{i}", "value": text(rng, 12)}
        service.memory_write(person, WriteParams.model_validate(params))
    tokens = [
        service.token_create(
            person, TokenCreateParams.model_validate({"name": f"agent-{n}", "permission": "write"})
        ).token
        for n in range(clients)
    ]
    service.store.close()
    # wordllama (the semantic extra) sets the root logger to INFO on import, and httpx2
    # would then log every request of the load: the generator's own cost, not the server's.
    logging.getLogger().setLevel(logging.WARNING)
    return tokens


def start_server(env: dict[str, str], port: int, workers: int = 1) -> subprocess.Popen[bytes]:
    command = [str(EXE), "serve", "--host", HOST, "--port", str(port), "--no-admin-token"]
    server = subprocess.Popen(
        command if workers == 1 else [*command, "--workers", str(workers)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx2.get(f"http://{HOST}:{port}/healthz", timeout=1).status_code == 200:
                return server
        except httpx2.TransportError:
            time.sleep(0.05)
    server.kill()
    raise SystemExit("the server did not start")


@dataclass(frozen=True)
class Phase:
    name: str
    clients: int
    requests: int  # per client
    write_share: float | None  # None: reads of seeded lessons only


def request_for(phase: Phase, rng: random.Random, n: int, i: int, seeded: int) -> tuple[str, Any]:
    """The kind and body of client ``n``'s request ``i``."""
    if phase.write_share is None:
        k = rng.randrange(seeded)
        return "read", {"scope": SCOPES[k % len(SCOPES)], "key": f"seed-{k}"}
    if rng.random() < phase.write_share:
        body = {
            "scope": rng.choice(SCOPES),
            "key": f"c{n}-{i % 40}",  # revisits keys: creates, new versions and repeats
            "value": text(rng, 12),
        }
        return "write", body
    return "search", {"query": text(rng, 2), "scopes": rng.sample(SCOPES, 2)}


async def client(n: int, url: str, token: str, phase: Phase, seeded: int, tally: Tally) -> None:
    """One agent: its requests one after another on one keep-alive connection."""
    rng = random.Random(n)
    headers = {"Authorization": f"Bearer {token}", "Lorestore-Session": f"bench-{n}"}
    async with httpx2.AsyncClient(base_url=url, headers=headers, timeout=30) as http:
        for i in range(phase.requests):
            kind, body = request_for(phase, rng, n, i, seeded)
            started = time.perf_counter()
            response = await http.post(f"/api/v1/memory_{kind}", json=body)
            tally.latencies[kind].append(time.perf_counter() - started)
            if response.status_code != 200:
                tally.errors.append(f"{kind} {response.status_code} {response.text[:120]}")


async def raw_client(n: int, url: str, token: str, phase: Phase, seeded: int, tally: Tally) -> None:
    """``client`` with HTTP/1.1 written and read by hand on one keep-alive connection: a
    load generator that costs the machine a fraction of httpx's CPU, so that on a machine
    whose cores it shares, more of them are left to the server (as wrk would)."""
    rng = random.Random(n)
    host, _, port = url.removeprefix("http://").partition(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    head = (
        f"Host: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Lorestore-Session: bench-{n}\r\nContent-Type: application/json\r\n"
    )
    try:
        for i in range(phase.requests):
            kind, body = request_for(phase, rng, n, i, seeded)
            data = json.dumps(body).encode()
            started = time.perf_counter()
            writer.write(
                f"POST /api/v1/memory_{kind} HTTP/1.1\r\n{head}Content-Length: {len(data)}"
                "\r\n\r\n".encode()
                + data
            )
            status, answer = await read_response(reader)
            tally.latencies[kind].append(time.perf_counter() - started)
            if status != 200:
                tally.errors.append(f"{kind} {status} {answer[:120]!r}")
    finally:
        writer.close()


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """The status and body of one response (the server always sends Content-Length)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return int(lines[0].split()[1]), await reader.readexactly(length)


async def drive(
    url: str, tokens: list[str], phase: Phase, seeded: int, limit: float, raw: bool = False
) -> Any:
    tally = Tally()
    started = time.perf_counter()
    one = raw_client if raw else client
    tasks = [one(n, url, tokens[n], phase, seeded, tally) for n in range(phase.clients)]
    try:
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=limit)
        complete = True
    except TimeoutError:
        complete = False
    return tally, time.perf_counter() - started, complete


def calibration_us() -> float:
    """µs per ``sum(range(1000))``, best of 20: how fast the machine is right now."""
    best = min(timeit.repeat("sum(range(1000))", number=2000, repeat=20))
    return round(best / 2000 * 1e6, 1)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time so far of process ``pid`` and the processes it started (the
    server's workers) (Linux /proc; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        children = [
            int(child)
            for task in Path(f"/proc/{pid}/task").iterdir()
            for child in (task / "children").read_text().split()
        ]
    except OSError:
        return None
    # After the command's name: state is field 3; utime and stime are fields 14 and 15.
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own + sum(cpu_seconds(child) or 0.0 for child in children)


def percentiles(samples: list[float]) -> dict[str, float]:
    if len(samples) < 2:
        return {}
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return {"p50_ms": cuts[49] * 1000, "p95_ms": cuts[94] * 1000, "p99_ms": cuts[98] * 1000}


def report(
    phase: Phase, tally: Tally, elapsed: float, complete: bool, cpu: float | None, mine: float
) -> dict[str, Any]:
    everything = [x for samples in tally.latencies.values() for x in samples]
    per_request = None if cpu is None or not everything else cpu / len(everything) * 1e6
    return {
        "phase": phase.name,
        "clients": phase.clients,
        "requests": len(everything),
        "planned": phase.clients * phase.requests,
        "complete": complete,
        "write_share": phase.write_share,
        "seconds": round(elapsed, 2),
        "throughput_rps": round(len(everything) / elapsed, 1),
        "server_cpu_us_per_request": None if per_request is None else round(per_request),
        # The load generator's own CPU (this process): the other half of the machine's work.
        "client_cpu_us_per_request": round(mine / max(1, len(everything)) * 1e6),
        "all": percentiles(everything),
        **{
            kind: {"count": len(samples), **percentiles(samples)}
            for kind, samples in tally.latencies.items()
            if samples
        },
        "errors": len(tally.errors),
        "first_errors": tally.errors[:5],
    }


def print_table(backend: str, results: list[dict[str, Any]], calibration: list[float]) -> None:
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"{backend} on {machine}; calibration {calibration[0]} -> {calibration[1]} µs")
    print(
        "| phase | clients | requests | req/s | CPU µs/req server / client | kind | p50 ms "
        "| p95 ms | p99 ms | errors |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for result in results:
        flag = "" if result["complete"] else " (INCOMPLETE: time limit)"
        kinds = [k for k in ("read", "write", "search") if k in result]
        for kind in ["all", *kinds] if len(kinds) > 1 else kinds:
            cells = " | ".join(f"{result[kind][p]:.1f}" for p in ("p50_ms", "p95_ms", "p99_ms"))
            print(
                f"| {result['phase']}{flag} | {result['clients']} | {result['requests']} | "
                f"{result['throughput_rps']} | {result['server_cpu_us_per_request']} / "
                f"{result['client_cpu_us_per_request']} | "
                f"{kind} | {cells} | {result['errors']} |"
            )


PHASES = {
    "one": Phase("one", clients=1, requests=400, write_share=None),
    "reads": Phase("reads", clients=16, requests=250, write_share=None),
    "mixed": Phase("mixed", clients=16, requests=250, write_share=0.3),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phases", default="one,reads,mixed", help="of: " + ",".join(PHASES))
    parser.add_argument("--clients", type=int, help="clients of the concurrent phases (16)")
    parser.add_argument("--requests", type=int, help="per client (400 alone, 250 concurrent)")
    parser.add_argument("--write-share", type=float, default=0.3, help="of the mixed phase")
    parser.add_argument("--seed-lessons", type=int, default=2000)
    parser.add_argument("--time-limit", type=float, default=300.0, help="seconds a phase")
    parser.add_argument(
        "--database-url",
        "--postgres",
        help="a PostgreSQL URL, the app role's (default: embedded SQLite)",
    )
    parser.add_argument(
        "--client",
        choices=["httpx", "raw"],
        default="httpx",
        help="httpx (as remote mode sends), or raw: HTTP/1.1 by hand, a lighter generator",
    )
    parser.add_argument("--workers", type=int, default=1, help="of lorestore serve (1)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    try:
        phases = [PHASES[name] for name in args.phases.split(",")]
    except KeyError as exc:
        parser.error(f"unknown phase {exc}; phases are {', '.join(PHASES)}")
    phases = [
        Phase(
            p.name,
            p.clients if p.clients == 1 or args.clients is None else args.clients,
            args.requests or p.requests,
            None if p.write_share is None else args.write_share,
        )
        for p in phases
    ]
    backend = "postgresql" if args.database_url else "sqlite (embedded)"
    backend += f", {args.client} clients, {args.workers} worker process(es)"
    results, calibration = [], [calibration_us()]
    with tempfile.TemporaryDirectory(prefix="lorestore-load-") as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LORESTORE_")}
        env.update(LORESTORE_HOME=home, LORESTORE_MAINTENANCE_HOURS="off")
        if args.database_url:
            env["LORESTORE_DATABASE_URL"] = args.database_url
        # Tokens of its own for each phase: a token's per-minute budget (600) must not carry
        # over from one phase into the next and refuse its requests.
        tokens = prepare(env, sum(p.clients for p in phases), args.seed_lessons)
        port = free_port()
        server = start_server(env, port, args.workers)
        try:
            url = f"http://{HOST}:{port}"
            for phase in phases:
                mine, tokens = tokens[: phase.clients], tokens[phase.clients :]
                run = drive(
                    url, mine, phase, args.seed_lessons, args.time_limit, args.client == "raw"
                )
                cpu_before, mine = cpu_seconds(server.pid), time.process_time()
                outcome = asyncio.run(run)
                cpu_after, mine = cpu_seconds(server.pid), time.process_time() - mine
                cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
                results.append(report(phase, *outcome, cpu, mine))
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
    calibration.append(calibration_us())
    if args.json:
        document = {"backend": backend, "calibration_us": calibration, "phases": results}
        print(json.dumps(document, indent=2))
    else:
        print_table(backend, results, calibration)
    if any(r["errors"] or not r["complete"] for r in results):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
