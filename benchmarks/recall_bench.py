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
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# The code measured: this checkout's, or another's with LORESTORE_BENCH_SRC (as postgres_rls.py;
# PYTHONPATH alone would come after this checkout's src/ and measure it twice).
SRC = os.environ.get("LORESTORE_BENCH_SRC") or str(HERE.parent / "src")
sys.path.insert(0, str(HERE))
sys.path.insert(0, SRC)

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
    paths = [SRC, os.environ.get("PYTHONPATH", "")]
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


def _contexts(tasks: Iterable[str]) -> list[RecallParams]:
    """One recall context per task, over the corpus's repos, branches and projects in turn."""
    return [
        RecallParams(
            repo=f"acme/svc{i % 5}",
            branch=f"feat-{i % 3}",
            project=f"p{i % 5}",
            task=task,
            budget=2000,
        )
        for i, task in enumerate(tasks)
    ]


def _pass(
    service: LessonService, contexts: list[RecallParams]
) -> tuple[list[float], list[int], list[int]]:
    """Every context recalled once, in order: each call's time and what it offered and held."""
    timings, offered, held = [], [], []
    for params in contexts:
        start = time.perf_counter_ns()
        result = service.memory_recall(ACTOR, params)
        timings.append((time.perf_counter_ns() - start) / 1e6)
        offered.append(len(result.offered))
        held.append(len(result.held))
    return timings, offered, held


def measure(size: int, samples: int, rounds: int = 3) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        store = _store(size, Path(tmp))
        service = LessonService(store, rate_limit=None)
        contexts = _contexts(Corpus(seed=11).queries(samples))
        # Warm up as a running server is warm, with other tasks than the timed ones: the store's
        # pages the ladders touch come into the caches, the timed queries' own answers do not.
        _pass(service, _contexts(Corpus(seed=12).queries(samples)))
        # As `lorestore serve` and `lorestore mcp` do once started (transports.settle_heap):
        # start-up's objects leave the collections that each recall's garbage triggers. A
        # checkout from before it (LORESTORE_BENCH_SRC) is measured as its servers ran.
        try:
            from lorestore.transports import settle_heap
        except ImportError:
            pass
        else:
            settle_heap()
        passes = [_pass(service, contexts) for _ in range(rounds)]
        store.close()
    # Each figure is taken over one pass of every context; with several rounds, the median of
    # the rounds' figures (a burst of the shared machine moves one round, not the median).
    per_round = {
        f"p{q}_ms": [_percentile(timings, q) for timings, _, _ in passes] for q in (50, 95, 99)
    }
    _, offered, held = passes[0]
    return {
        **{name: statistics.median(values) for name, values in per_round.items()},
        "offered_mean": statistics.mean(offered),
        "held_mean": statistics.mean(held),
        **({"rounds": per_round} if rounds > 1 else {}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="passes over the contexts; each figure is then the median of the passes' figures",
    )
    args = parser.parse_args()
    results = {}
    for size in (int(s) for s in args.sizes.split(",")):
        results[size] = measure(size, args.samples, args.rounds)
        shown = {k: round(v, 3) for k, v in results[size].items() if k != "rounds"}
        print(size, json.dumps(shown), file=sys.stderr)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
