"""The write cost of keeping audit chain heads: ``memory_write`` timed on a fresh store, on
SQLite and on PostgreSQL (as the app role), with two versions of lorestore in one interleaved
run, beside the machine's calibration figure.

``--before SRC`` names the ``src/`` folder of the version to compare with, e.g.
``git archive BASE src | tar -x -C /tmp/before``; the other side is the installed lorestore.
Each round runs one child process per side and backend, the sides' order alternating, so a
busy moment of a shared machine falls on both. Figures go to docs/benchmarks.md by hand."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import timeit
import uuid
from pathlib import Path
from typing import Any

SCOPE = "repo::bench/app"
DEFAULT_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


def calibration() -> float:
    """µs per sum(range(1000)): the figure every benchmark page of this project quotes."""
    return min(timeit.repeat("sum(range(1000))", number=2000, repeat=20)) / 2000 * 1e6


def _timed_writes(store: Any, warmup: int, writes: int) -> list[float]:
    from lorestore.auth.actor import local_actor
    from lorestore.models import WriteParams
    from lorestore.service import LessonService

    service = LessonService(store)
    actor = local_actor(session="bench")
    samples = []
    for i in range(warmup + writes):
        value = f"Lesson {i}: run the migrations first"
        params = WriteParams(scope=SCOPE, key=f"k{i}", value=value)
        start = time.perf_counter()
        service.memory_write(actor, params)
        if i >= warmup:
            samples.append((time.perf_counter() - start) * 1e6)
    return samples


def _sqlite(warmup: int, writes: int, folder: Path) -> list[float]:
    from lorestore.storage.sqlite import SQLiteStore

    path = folder / f"lorestore-bench-{uuid.uuid4().hex}.db"
    store = SQLiteStore(path)
    try:
        return _timed_writes(store, warmup, writes)
    finally:
        store.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


def _postgres(warmup: int, writes: int, admin: str) -> list[float]:
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from lorestore.storage.postgres import PostgresStore
    from lorestore.storage.postgres.setup import init_database

    name = f"lorestore_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        params = conninfo_to_dict(admin) | {"dbname": name}
        report = init_database(make_conninfo(**params))
        store = PostgresStore(report.app_url, max_size=2)
        try:
            return _timed_writes(store, warmup, writes)
        finally:
            store.close()
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def trigger_cost(admin: str, events: int = 2000) -> dict[str, float]:
    """What the head's trigger adds to an append inside PostgreSQL, with the installed
    lorestore's schema: ``EXPLAIN ANALYZE`` of one INSERT of ``events`` audit rows gives the
    trigger's own time beside the statement's."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from lorestore.storage.postgres.setup import init_database

    name = f"lorestore_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        url = make_conninfo(**(conninfo_to_dict(admin) | {"dbname": name}))
        init_database(url)
        with psycopg.connect(url) as conn:
            row = conn.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) INSERT INTO audit_log (owner, at, actor, action, "
                "prev_hash, hash) SELECT 'user:bench', now(), 'user:bench', 'x', md5(n::text), "
                "md5((n + 1)::text) FROM generate_series(1, %s) AS n",
                (events,),
            ).fetchone()
            assert row is not None
            conn.rollback()
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
    (plan,) = row[0]
    trigger = sum(
        t["Time"] for t in plan["Triggers"] if t["Trigger Name"] == "audit_log_advance_head"
    )
    return {
        "trigger_us_per_event": round(trigger / events * 1000, 1),
        "insert_us_per_event": round(plan["Execution Time"] / events * 1000, 1),
    }


def sqlite_trigger_cost(folder: Path, events: int = 5000, rounds: int = 7) -> dict[str, float]:
    """What the head's triggers add to an append on SQLite, with the installed lorestore's
    schema: ``events`` audit rows inserted in one transaction (rolled back), into a store as
    it is and into one whose head triggers were dropped, alternately; medians of µs/event."""
    import sqlite3

    from lorestore.storage.sqlite import SQLiteStore

    paths = {}
    for side in ("with_heads", "without"):
        paths[side] = folder / f"lorestore-bench-{uuid.uuid4().hex}.db"
        SQLiteStore(paths[side]).close()
    plain = sqlite3.connect(paths["without"])
    for trigger in (
        "audit_log_advance_head",
        "audit_log_first_head",
        "audit_heads_insert_guard",
        "audit_heads_update_guard",
    ):
        plain.execute(f"DROP TRIGGER {trigger}")
    plain.commit()
    plain.close()
    rows = [
        ("user:bench", "2026-01-01T00:00:00Z", "user:bench", "x", f"p{n}", f"h{n}")
        for n in range(events)
    ]
    insert = (
        "INSERT INTO audit_log (owner, at, actor, action, prev_hash, hash) "
        "VALUES (?, ?, ?, ?, ?, ?)"
    )
    times: dict[str, list[float]] = {side: [] for side in paths}
    try:
        for n in range(rounds):
            for side in paths if n % 2 == 0 else reversed(list(paths)):
                conn = sqlite3.connect(paths[side], isolation_level=None)
                conn.execute("BEGIN IMMEDIATE")
                start = time.perf_counter()
                conn.executemany(insert, rows)
                times[side].append((time.perf_counter() - start) / events * 1e6)
                conn.execute("ROLLBACK")
                conn.close()
    finally:
        for path in paths.values():
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
    with_heads = statistics.median(times["with_heads"])
    without = statistics.median(times["without"])
    return {
        "append_us_with_heads": round(with_heads, 2),
        "append_us_without": round(without, 2),
        "added_us_per_event": round(with_heads - without, 2),
    }


def child(args: argparse.Namespace) -> None:
    if args.child == "sqlite":
        samples = _sqlite(args.warmup, args.writes, Path(args.folder))
    else:
        samples = _postgres(args.warmup, args.writes, args.admin)
    print(json.dumps({"p50_us": statistics.median(samples), "mean_us": statistics.mean(samples)}))


def _run_side(src: str | None, backend: str, args: argparse.Namespace) -> dict[str, float]:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    command = [sys.executable, __file__, "--child", backend, "--writes", str(args.writes)]
    command += ["--warmup", str(args.warmup), "--admin", args.admin, "--folder", args.folder]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    figures: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return figures


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", help="src/ folder of the version to compare with")
    p.add_argument("--backends", default="sqlite,postgres")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--writes", type=int, default=400, help="timed writes per child (400)")
    p.add_argument("--warmup", type=int, default=100, help="untimed writes first (100)")
    p.add_argument("--admin", default=DEFAULT_ADMIN, help="a superuser URL (PostgreSQL)")
    p.add_argument("--folder", default="/tmp", help="where the SQLite files go")
    p.add_argument("--child", choices=("sqlite", "postgres"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
        return 0
    sides = {"before": args.before, "after": None}
    results: dict[str, dict[str, list[float]]] = {}
    calibrations = []
    for n in range(args.rounds):
        calibrations.append(calibration())
        order = list(sides) if n % 2 == 0 else list(reversed(sides))
        for backend in args.backends.split(","):
            for side in order:
                if side == "before" and not args.before:
                    continue
                p50 = _run_side(sides[side], backend, args)["p50_us"]
                results.setdefault(backend, {}).setdefault(side, []).append(p50)
                print(f"round {n + 1} {backend} {side}: p50 {p50:.0f} µs", file=sys.stderr)
    calibrations.append(calibration())
    summary: dict[str, Any] = {
        "calibration_us": {"min": min(calibrations), "median": statistics.median(calibrations)},
        "rounds": args.rounds,
        "writes": args.writes,
    }
    for backend, by_side in results.items():
        medians = {side: statistics.median(v) for side, v in by_side.items()}
        entry: dict[str, Any] = {f"{side}_p50_us": round(v, 1) for side, v in medians.items()}
        if "before" in medians:
            entry["ratio_of_medians"] = round(medians["after"] / medians["before"], 3)
            # Each round's two sides ran back to back: their ratio is the least disturbed by
            # the machine's load changing from round to round.
            rounds = [a / b for a, b in zip(by_side["after"], by_side["before"], strict=True)]
            entry["median_round_ratio"] = round(statistics.median(rounds), 3)
        summary[backend] = entry
    if "sqlite" in args.backends.split(","):
        summary["sqlite_trigger"] = sqlite_trigger_cost(Path(args.folder))
    if "postgres" in args.backends.split(","):
        summary["postgres_trigger"] = trigger_cost(args.admin)
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
