"""Bounded load test of ``lorestore serve`` on loopback: 16 concurrent REST clients, each with
its own write token (one agent per token), mixing writes and searches on the embedded store
(or on PostgreSQL with --database-url). A fixed number of requests and a time limit; reports
throughput, p50/p95/p99 per kind and the error count, which must be zero.

    .venv/bin/python benchmarks/load_http.py                 # 16 clients x 250 requests
    .venv/bin/python benchmarks/load_http.py --json          # machine-readable
"""

from __future__ import annotations

import argparse
import asyncio
import json
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
    latencies: dict[str, list[float]] = field(default_factory=lambda: {"write": [], "search": []})
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
    return tokens


def start_server(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(
        [str(EXE), "serve", "--host", HOST, "--port", str(port), "--no-admin-token"],
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


async def client(
    n: int, url: str, token: str, requests: int, write_share: float, tally: Tally
) -> None:
    rng = random.Random(n)
    headers = {"Authorization": f"Bearer {token}", "Lorestore-Session": f"bench-{n}"}
    async with httpx2.AsyncClient(base_url=url, headers=headers, timeout=30) as http:
        for i in range(requests):
            if rng.random() < write_share:
                kind, body = (
                    "write",
                    {
                        "scope": rng.choice(SCOPES),
                        "key": f"c{n}-{i % 40}",  # revisits keys: creates, new versions and repeats
                        "value": text(rng, 12),
                    },
                )
            else:
                kind, body = "search", {"query": text(rng, 2), "scopes": rng.sample(SCOPES, 2)}
            started = time.perf_counter()
            response = await http.post(f"/api/v1/memory_{kind}", json=body)
            tally.latencies[kind].append(time.perf_counter() - started)
            if response.status_code != 200:
                tally.errors.append(f"{kind} {response.status_code} {response.text[:120]}")


async def drive(url: str, tokens: list[str], per_client: int, share: float, limit: float) -> Any:
    tally = Tally()
    started = time.perf_counter()
    tasks = [client(n, url, t, per_client, share, tally) for n, t in enumerate(tokens)]
    try:
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=limit)
        complete = True
    except TimeoutError:
        complete = False
    return tally, time.perf_counter() - started, complete


def percentiles(samples: list[float]) -> dict[str, float]:
    if len(samples) < 2:
        return {}
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return {"p50_ms": cuts[49] * 1000, "p95_ms": cuts[94] * 1000, "p99_ms": cuts[98] * 1000}


def report(
    args: argparse.Namespace, tally: Tally, elapsed: float, complete: bool
) -> dict[str, Any]:
    everything = tally.latencies["write"] + tally.latencies["search"]
    return {
        "backend": "postgresql" if args.database_url else "sqlite (embedded)",
        "clients": args.clients,
        "requests": len(everything),
        "planned": args.clients * args.requests,
        "complete": complete,
        "write_share": args.write_share,
        "seconds": round(elapsed, 2),
        "throughput_rps": round(len(everything) / elapsed, 1),
        "all": percentiles(everything),
        "write": {"count": len(tally.latencies["write"]), **percentiles(tally.latencies["write"])},
        "search": {
            "count": len(tally.latencies["search"]),
            **percentiles(tally.latencies["search"]),
        },
        "errors": len(tally.errors),
        "first_errors": tally.errors[:5],
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
    }


def print_table(result: dict[str, Any]) -> None:
    print(
        f"{result['backend']}: {result['clients']} clients, {result['requests']} requests "
        f"({result['write_share']:.0%} writes) in {result['seconds']} s on {result['machine']}"
    )
    print(
        f"throughput {result['throughput_rps']} req/s, errors {result['errors']}"
        + ("" if result["complete"] else " -- INCOMPLETE: the time limit was reached")
    )
    print("| requests | count | p50 ms | p95 ms | p99 ms |\n|---|---|---|---|---|")
    for kind in ("all", "write", "search"):
        row = result[kind]
        count = row.get("count", result["requests"])
        cells = [f"{row[p]:.1f}" for p in ("p50_ms", "p95_ms", "p99_ms")]
        print(f"| {kind} | {count} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=250, help="per client")
    parser.add_argument("--write-share", type=float, default=0.3)
    parser.add_argument("--seed-lessons", type=int, default=2000)
    parser.add_argument("--time-limit", type=float, default=300.0, help="seconds, then stop")
    parser.add_argument("--database-url", help="a PostgreSQL URL (default: embedded SQLite)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lorestore-load-") as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LORESTORE_")}
        env.update(LORESTORE_HOME=home, LORESTORE_MAINTENANCE_HOURS="off")
        if args.database_url:
            env["LORESTORE_DATABASE_URL"] = args.database_url
        tokens = prepare(env, args.clients, args.seed_lessons)
        port = free_port()
        server = start_server(env, port)
        try:
            url = f"http://{HOST}:{port}"
            run = drive(url, tokens, args.requests, args.write_share, args.time_limit)
            tally, elapsed, complete = asyncio.run(run)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
    result = report(args, tally, elapsed, complete)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    if result["errors"] or not complete:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
