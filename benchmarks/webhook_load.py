"""Load test of GitHub capture: 1,000 signed deliveries from 16 concurrent senders on loopback
against ``lorestore serve`` (``POST /webhooks/github``), then the store counted: none lost, none
doubled. 900 deliveries carry distinct review comments; 100 are redeliveries of deliveries
already sent (the same ``X-GitHub-Delivery``), sent by another sender, so some of them race
their original. Every comment must be one lesson, every redelivery a ``replay``.

    .venv/bin/python benchmarks/webhook_load.py                   # embedded SQLite
    .venv/bin/python benchmarks/webhook_load.py --database-url postgresql://lorestore_app@...
    .venv/bin/python benchmarks/webhook_load.py --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sys
import tempfile
import time
import timeit
from collections import Counter
from pathlib import Path
from typing import Any

import httpx2
from cryptography.fernet import Fernet

from load_http import HOST, free_port, percentiles, start_server

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/github.py: payloads
from tests import github

from lorestore.auth.actor import local_actor
from lorestore.composition import build_service
from lorestore.config import load_settings
from lorestore.ingest.models import WebhookStatsParams, WebhookTargetParams
from lorestore.models import ListParams

WORDS = [
    "fixture",
    "clock",
    "retry",
    "migration",
    "postgres",
    "timeout",
    "cache",
    "schema",
    "deploy",
    "branch",
    "flaky",
]


def calibration() -> float:
    """µs per sum(range(1000)): the figure every benchmark page of this project quotes."""
    return min(timeit.repeat("sum(range(1000))", number=2000, repeat=20)) / 2000 * 1e6


def deliveries(secret: str, unique: int, again: int) -> list[tuple[str, dict[str, str], bytes]]:
    """(kind, headers, body): ``unique`` distinct comments, then ``again`` redeliveries of
    some of them (same id and body), shuffled so that a redelivery may precede its original."""
    rng = random.Random(7)
    sent = []
    for n in range(unique):
        text = f"Comment {n}: " + " ".join(rng.choice(WORDS) for _ in range(12))
        comment = github.review_comment(5_000_000 + n, text, line=n % 400 + 1)
        body = github.body_of(github.review_comment_event(comment))
        headers = github.headers("pull_request_review_comment", body, secret, f"bench-{n}")
        sent.append(("original", headers, body))
    for kind_headers_body in rng.sample(sent, again):
        sent.append(("redelivery", kind_headers_body[1], kind_headers_body[2]))
    rng.shuffle(sent)
    return sent


async def sender(
    url: str, work: list[tuple[str, dict[str, str], bytes]], results: list[Any]
) -> None:
    async with httpx2.AsyncClient(base_url=url, timeout=60) as http:
        for kind, headers, body in work:
            started = time.perf_counter()
            response = await http.post("/webhooks/github", content=body, headers=headers)
            elapsed = time.perf_counter() - started
            outcome = response.json().get("outcome") if response.status_code < 300 else None
            results.append((kind, response.status_code, outcome, elapsed))


async def drive(url: str, planned: list[Any], senders: int) -> tuple[list[Any], float]:
    results: list[Any] = []
    shares = [planned[n::senders] for n in range(senders)]
    started = time.perf_counter()
    await asyncio.gather(*(sender(url, share, results) for share in shares))
    return results, time.perf_counter() - started


def counted(env: dict[str, str]) -> tuple[int, dict[str, int]]:
    """The lessons at repo::acme/app and the webhook's counts, read from the store."""
    service = build_service(load_settings(env))
    try:
        lessons, cursor = 0, None
        while True:
            page = service.memory_list(
                local_actor(),
                ListParams.model_validate(
                    {"scope": "repo::acme/app", "limit": 200, "cursor": cursor}
                ),
            )
            lessons += len(page.lessons)
            cursor = page.next_cursor
            if not cursor:
                break
        stats = service.webhook_stats(local_actor(), WebhookStatsParams())
        return lessons, {c.reason: c.count for c in stats.counts}
    finally:
        service.store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deliveries", type=int, default=1000)
    parser.add_argument("--redeliveries", type=int, default=100, help="of those, resent")
    parser.add_argument("--senders", type=int, default=16)
    parser.add_argument("--database-url", help="a PostgreSQL URL (default: embedded SQLite)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    unique = args.deliveries - args.redeliveries
    before = calibration()
    with tempfile.TemporaryDirectory(prefix="lorestore-webhook-") as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LORESTORE_")}
        env.update(
            LORESTORE_HOME=home,
            LORESTORE_MAINTENANCE_HOURS="off",
            LORESTORE_WEBHOOK_KEY=Fernet.generate_key().decode(),
        )
        if args.database_url:
            env["LORESTORE_DATABASE_URL"] = args.database_url
        service = build_service(load_settings(env))
        target = WebhookTargetParams.model_validate({"target": "acme/app"})
        secret = service.webhook_add(local_actor(), target).secret
        service.store.close()
        planned = deliveries(secret, unique, args.redeliveries)
        port = free_port()
        server = start_server(env, port)
        try:
            results, elapsed = asyncio.run(drive(f"http://{HOST}:{port}", planned, args.senders))
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
        lessons, stats = counted(env)
    after = calibration()
    outcomes = Counter((kind, status, outcome) for kind, status, outcome, _ in results)
    report = {
        "backend": "postgresql" if args.database_url else "sqlite (embedded)",
        "deliveries": len(results),
        "senders": args.senders,
        "seconds": round(elapsed, 2),
        "deliveries_per_s": round(len(results) / elapsed, 1),
        **percentiles([r[3] for r in results]),
        "answers": {f"{k} {s} {o}": n for (k, s, o), n in sorted(outcomes.items(), key=str)},
        "lessons_in_store": lessons,
        "counted_created": stats.get("created", 0),
        "expected_lessons": unique,
        "calibration_us": [round(before, 1), round(after, 1)],
    }
    lost_or_doubled = (
        lessons != unique
        or stats.get("created", 0) != unique
        or sum(1 for r in results if r[2] == "replay") != args.redeliveries
        or any(r[1] != 200 for r in results)
    )
    report["none_lost_none_doubled"] = not lost_or_doubled
    print(json.dumps(report, indent=2) if args.json else _table(report))
    if lost_or_doubled:
        raise SystemExit(1)


def _table(r: dict[str, Any]) -> str:
    rows = [
        f"{r['backend']}: {r['deliveries']} deliveries from {r['senders']} senders in "
        f"{r['seconds']} s ({r['deliveries_per_s']}/s), calibration {r['calibration_us']} µs",
        f"latency p50 {r['p50_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms",
        f"lessons in the store {r['lessons_in_store']} (expected {r['expected_lessons']}), "
        f"counted created {r['counted_created']}",
        *(f"  {answer}: {n}" for answer, n in r["answers"].items()),
        f"none lost, none doubled: {r['none_lost_none_doubled']}",
    ]
    return "\n".join(rows)


if __name__ == "__main__":
    main()
