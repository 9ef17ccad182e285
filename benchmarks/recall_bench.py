"""Recall latency in-process on SQLite: a 2,000-token budget over the full ladder (branch,
repo, project, global) with the corpus's task queries, at 1k, 10k and 100k lessons.
Target: p95 <= 10 ms at 100k. Run: .venv/bin/python benchmarks/recall_bench.py
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from corpus import Corpus  # noqa: E402
from lorestore.auth.actor import local_actor  # noqa: E402
from lorestore.models import RecallParams  # noqa: E402
from lorestore.service import LessonService  # noqa: E402
from lorestore.storage.sqlite import SQLiteStore  # noqa: E402

ACTOR = local_actor(session="bench")


def _cached(size: int) -> Path:
    """The benchmark suite's cached store of ``size`` corpus lessons, built once per size and
    schema as `benchmarks/run.py` builds it, found (or built) by a child process: the suite's
    helpers import rich and the MCP stack, which would triple this process's heap and with it
    the cost of every full garbage collection during the timed calls."""
    code = (
        "from common import Workload, progress\n"
        "from inprocess import cached_db\n"
        "with progress() as prog:\n"
        f"    print(cached_db(Workload({size}, ops=0, warmup=0), prog)[0])\n"
    )
    paths = [str(HERE.parent / "src"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    child = [sys.executable, "-c", code]
    done = subprocess.run(child, cwd=HERE, env=env, check=True, stdout=subprocess.PIPE, text=True)
    return Path(done.stdout.strip().splitlines()[-1])


def _store(size: int, workdir: Path) -> SQLiteStore:
    """A private copy of the cached store (the timed recalls write the recall log)."""
    target = workdir / "recall.db"
    shutil.copyfile(_cached(size), target)
    return SQLiteStore(target)


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
