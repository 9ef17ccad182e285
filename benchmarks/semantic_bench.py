"""Hybrid retrieval's cost (issue 21), in process, each pair measured side by side in one run
on the same machine (shared with other work: read the ratios, and the calibration figure,
µs per ``sum(range(1000))``, taken before and after):

- recall p50/p95 at N lessons (default 100k, the suite's cached corpus, every lesson with its
  vector) on SQLite, lexical (semantic off) against hybrid, on two copies of one store, the
  passes alternating; targets: lexical <= 10 ms, hybrid <= 15 ms at p95;
- write p50 with and without embedding (two fresh SQLite stores, writes alternating); target:
  the embedding adds <= 1 ms;
- reindex lessons/s: every vector of a copy made another model's, then re-embedded in pages
  as ``lorestore reindex`` does; target >= 5,000 lessons/s;
- with ``--postgres ADMIN_URL``: write p50 with and without embedding, and recall p95 lexical
  against hybrid at ``--pg-size`` lessons, on a throwaway PostgreSQL database as the app role;
  with ``--pg-database NAME`` too, recall only, on that kept database of the corpus, and
  ``memory_search`` of the corpus queries over four rungs (p50/p95; target <= 25 ms p95).

Run: .venv/bin/python benchmarks/semantic_bench.py [--size 100000] [--postgres URL]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from corpus import Corpus  # noqa: E402
from lorestore.models import SearchParams, WriteParams  # noqa: E402
from lorestore.service import LessonService  # noqa: E402
from lorestore.storage.protocol import Store  # noqa: E402
from lorestore.storage.sqlite import SQLiteStore  # noqa: E402
from lorestore.transports import settle_heap  # noqa: E402
from recall_bench import ACTOR, _cached, _contexts, _pass, _percentile  # noqa: E402


def calibration() -> float:
    """µs per sum(range(1000)): the figure every benchmark page of this project quotes."""
    return min(timeit.repeat("sum(range(1000))", number=2000, repeat=20)) / 2000 * 1e6


def recall_pair(stores: dict[str, Store], samples: int, rounds: int) -> dict[str, Any]:
    """p50/p95 per subject, passes alternating (the order flips each round)."""
    services = {name: LessonService(s, rate_limit=None) for name, s in stores.items()}
    contexts = _contexts(Corpus(seed=11).queries(samples))
    warm = _contexts(Corpus(seed=12).queries(samples))
    for service in services.values():  # each ladder's pages, and its vectors, loaded once
        _pass(service, warm)
    settle_heap()  # as `lorestore serve` and `lorestore mcp` do once started
    figures: dict[str, dict[str, list[float]]] = {n: {"p50": [], "p95": []} for n in services}
    offered: dict[str, float] = {}
    names = list(services)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            timings, got, _ = _pass(services[name], contexts)
            figures[name]["p50"].append(_percentile(timings, 50))
            figures[name]["p95"].append(_percentile(timings, 95))
            offered[name] = statistics.mean(got)
    return {
        name: {
            "p50_ms": statistics.median(f["p50"]),
            "p95_ms": statistics.median(f["p95"]),
            "offered_mean": offered[name],
        }
        for name, f in figures.items()
    }


def write_pair(stores: dict[str, Store], writes: int, warmup: int) -> dict[str, Any]:
    """Write p50 per subject: new lessons, one at a time, the subjects alternating."""
    services = {name: LessonService(s, rate_limit=None) for name, s in stores.items()}
    samples: dict[str, list[float]] = {name: [] for name in services}
    values = [v for _, _, v, _ in Corpus(seed=5).lessons(warmup + writes)]
    for i, value in enumerate(values):
        for name, service in services.items():
            # A scope per subject: on PostgreSQL both subjects share one database.
            params = WriteParams(scope=f"repo::bench/{name}", key=f"k{i}", value=value)
            start = time.perf_counter_ns()
            service.memory_write(ACTOR, params)
            if i >= warmup:
                samples[name].append((time.perf_counter_ns() - start) / 1e6)
    return {name: {"p50_ms": statistics.median(s)} for name, s in samples.items()}


def reindex_rate(path: Path) -> dict[str, Any]:
    """Every vector of the store made another model's, then all re-embedded in pages of 1,000
    as `lorestore reindex` does (one transaction a page)."""
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE lesson_vectors SET model = 'other/model'")
    store = SQLiteStore(path)
    try:
        with store.transaction(write=True) as tx:
            tx.embed_page(0, 10)  # the model loaded before the clock starts
        with store.transaction(write=False) as tx:
            total = tx.count_lessons_to_embed()
        start, done, after = time.perf_counter(), 0, 0
        while True:
            with store.transaction(write=True) as tx:
                n, after = tx.embed_page(after, 1000)
            if n == 0:
                break
            done += n
        seconds = time.perf_counter() - start
    finally:
        store.close()
    return {"lessons": done, "of": total, "seconds": seconds, "per_s": done / seconds}


def sqlite_figures(
    size: int, samples: int, rounds: int, writes: int, parts: set[str]
) -> dict[str, Any]:
    cached = _cached(size)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {name: Path(tmp) / f"{name}.db" for name in ("lexical", "hybrid")}
        for path in paths.values():
            shutil.copyfile(cached, path)
        stores: dict[str, Store] = {
            "lexical": SQLiteStore(paths["lexical"], semantic=False),
            "hybrid": SQLiteStore(paths["hybrid"]),
        }
        try:
            if "recall" in parts:
                out["recall"] = recall_pair(stores, samples, rounds)
        finally:
            for store in stores.values():
                store.close()
        if "reindex" in parts:
            out["reindex"] = reindex_rate(paths["hybrid"])
        if "write" not in parts:
            return out
        fresh = {
            "without": SQLiteStore(Path(tmp) / "w0.db", semantic=False),
            "with": SQLiteStore(Path(tmp) / "w1.db"),
        }
        try:
            out["write"] = write_pair(fresh, writes, warmup=200)
        finally:
            for store in fresh.values():
                store.close()
    return out


def postgres_figures(admin: str, size: int, samples: int, writes: int) -> dict[str, Any]:
    """Throwaway database as the app role: writes with and without embedding, then recall
    lexical against hybrid at ``size`` lessons (loaded through the service)."""
    from lorestore.cli.eval import postgres_store
    from lorestore.storage.postgres import PostgresStore

    out: dict[str, Any] = {}
    with postgres_store(admin) as hybrid:
        assert isinstance(hybrid, PostgresStore)
        lexical = PostgresStore(hybrid.url, max_size=2, semantic=False)
        try:
            out["write"] = write_pair({"without": lexical, "with": hybrid}, writes, warmup=100)
            _lift_caps(admin, hybrid.url)
            service = LessonService(hybrid, rate_limit=None)
            for scope, key, value, tags in Corpus(seed=7).lessons(size):
                params = WriteParams(scope=scope, key=key, value=value, tags=tags)
                service.memory_write(ACTOR, params)
            out["recall"] = recall_pair({"lexical": lexical, "hybrid": hybrid}, samples, 3)
        finally:
            lexical.close()
    return out


def postgres_recall(admin: str, database: str, samples: int) -> dict[str, Any]:
    """Recall lexical against hybrid as the app role on a kept database of the corpus (as
    `dashboard_bench.py --postgres ... --database NAME` keeps one; `lorestore reindex` gives
    its lessons their vectors, which `lorestore migrate` does not copy)."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from lorestore.storage.postgres import PostgresStore
    from lorestore.storage.postgres.setup import init_database

    report = init_database(make_conninfo(**(conninfo_to_dict(admin) | {"dbname": database})))
    hybrid = PostgresStore(report.app_url, max_size=2)
    lexical = PostgresStore(report.app_url, max_size=2, semantic=False)
    try:
        with hybrid.transaction(write=False) as tx:
            if tx.count_lessons_to_embed():
                raise SystemExit(f"{database}: lessons without a vector; run lorestore reindex")
        return {
            "recall": recall_pair({"lexical": lexical, "hybrid": hybrid}, samples, 3),
            "search": search_figures(hybrid, samples),
        }
    finally:
        lexical.close()
        hybrid.close()


# The ladder of recall_bench's first context, searched as a person searches it (issue 18,
# item 9: PostgreSQL search p95 at 100k).
SEARCH_SCOPES = ["global", "project::p0", "repo::acme/svc0", "branch::acme/svc0::feat-0"]


def search_figures(store: Store, samples: int) -> dict[str, float]:
    """``memory_search`` of the corpus queries over SEARCH_SCOPES (hybrid, the default page),
    after as many other queries and the heap settled: p50 and p95."""
    service = LessonService(store, rate_limit=None)
    for query in Corpus(seed=12).queries(samples):
        service.memory_search(ACTOR, SearchParams(query=query, scopes=SEARCH_SCOPES))
    settle_heap()
    timings = []
    for query in Corpus(seed=11).queries(samples):
        start = time.perf_counter_ns()
        service.memory_search(ACTOR, SearchParams(query=query, scopes=SEARCH_SCOPES))
        timings.append((time.perf_counter_ns() - start) / 1e6)
    return {"p50_ms": _percentile(timings, 50), "p95_ms": _percentile(timings, 95)}


def _lift_caps(admin: str, app_url: str) -> None:
    """No cap on the throwaway database (a server's default is 10,000 lessons an owner)."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(admin)
    params["dbname"] = conninfo_to_dict(app_url)["dbname"]
    with psycopg.connect(make_conninfo("", **params), autocommit=True) as conn:
        conn.execute("UPDATE cap_defaults SET max_active = NULL, max_bytes = NULL")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--writes", type=int, default=1000)
    parser.add_argument("--postgres", metavar="ADMIN_URL")
    parser.add_argument("--pg-size", type=int, default=20_000)
    parser.add_argument(
        "--pg-database",
        help="with --postgres: time recall on this kept database of the corpus instead of "
        "loading --pg-size lessons (no write figures)",
    )
    parser.add_argument("--parts", default="recall,reindex,write", help="of SQLite's figures")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    result: dict[str, Any] = {"calibration_us": [calibration()]}
    result["sqlite"] = sqlite_figures(args.size, args.samples, args.rounds, args.writes, parts)
    if args.postgres and args.pg_database:
        result["postgres"] = postgres_recall(args.postgres, args.pg_database, args.samples)
    elif args.postgres:
        result["postgres"] = postgres_figures(
            args.postgres, args.pg_size, args.samples, args.writes // 2
        )
    result["calibration_us"].append(calibration())
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
