"""Recall latency in-process on SQLite: a 2,000-token budget over the full ladder (branch,
repo, project, global) with the corpus's task queries, at 1k, 10k and 100k lessons.
Target: p95 <= 10 ms at 100k. Run: .venv/bin/python benchmarks/recall_bench.py
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from corpus import Corpus  # noqa: E402
from lorestore.auth.actor import local_actor  # noqa: E402
from lorestore.models import RecallParams, WriteParams  # noqa: E402
from lorestore.service import LessonService  # noqa: E402
from lorestore.storage.sqlite import SQLiteStore  # noqa: E402

CACHE = HERE / "results" / "cache"
ACTOR = local_actor(session="bench")


def _store(size: int, workdir: Path) -> SQLiteStore:
    """A copy of the benchmark suite's cached store of ``size`` corpus lessons, or a new one."""
    cached = sorted(CACHE.glob(f"lorestore-{size}-seed7-*.db"))
    target = workdir / "recall.db"
    if cached:
        shutil.copyfile(cached[-1], target)
        return SQLiteStore(target)
    store = SQLiteStore(target)
    service = LessonService(store, rate_limit=None)
    for scope, key, value, tags in Corpus(seed=7).lessons(size):
        service.memory_write(ACTOR, WriteParams(scope=scope, key=key, value=value, tags=tags))
    return store


def _percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def measure(size: int, samples: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        store = _store(size, Path(tmp))
        service = LessonService(store, rate_limit=None)
        tasks = list(Corpus(seed=11).queries(samples))
        contexts = [
            RecallParams(
                repo=f"acme/svc{i % 5}",
                branch=f"feat-{i % 3}",
                project=f"p{i % 5}",
                task=tasks[i],
                budget=2000,
            )
            for i in range(samples)
        ]
        for params in contexts[:20]:  # warm up
            service.memory_recall(ACTOR, params)
        timings, offered, held = [], [], []
        for params in contexts:
            start = time.perf_counter_ns()
            result = service.memory_recall(ACTOR, params)
            timings.append((time.perf_counter_ns() - start) / 1e6)
            offered.append(len(result.offered))
            held.append(len(result.held))
        store.close()
    return {
        "p50_ms": _percentile(timings, 50),
        "p95_ms": _percentile(timings, 95),
        "p99_ms": _percentile(timings, 99),
        "offered_mean": statistics.mean(offered),
        "held_mean": statistics.mean(held),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--samples", type=int, default=300)
    args = parser.parse_args()
    results = {}
    for size in (int(s) for s in args.sizes.split(",")):
        results[size] = measure(size, args.samples)
        print(size, json.dumps({k: round(v, 3) for k, v in results[size].items()}), file=sys.stderr)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
