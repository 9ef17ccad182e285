"""Recall on PostgreSQL, two checkouts side by side: the code of another checkout (--base) and
this one's, each on its own copy of one loaded database (a template kept by
`benchmarks/postgres_rls.py --sizes N --keep`), alternated for --rounds rounds with the order
swapped each round and the calibration figure (µs per sum(range(1000))) before every run;
recall p50/p95 as the app role over a repository and project ladder with the corpus's tasks.
Hybrid when the semantic extra is installed (as recall runs by default).

    .venv/bin/python benchmarks/postgres_recall_ab.py --base ../main --template NAME --size N
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def measure(src: str, dbname: str, samples: int) -> dict[str, float]:
    """In a child process whose lorestore is ``src``'s: recall ``samples`` times."""
    sys.path.insert(0, src)
    sys.path.insert(0, str(HERE))
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from corpus import Corpus
    from lorestore.auth.actor import local_actor
    from lorestore.models import RecallParams
    from lorestore.service import LessonService
    from lorestore.storage.postgres import PostgresStore
    from postgres_ab import _url

    params = conninfo_to_dict(_url(dbname))
    params.pop("password", None)
    params["user"] = "lorestore_app"
    service = LessonService(PostgresStore(make_conninfo(**params)), rate_limit=None)
    actor = local_actor(principal="user:bench", session="bench")
    tasks = list(Corpus(seed=11).queries(samples + 20))

    def recall(task: str) -> None:
        service.memory_recall(actor, RecallParams(repo="acme/svc0", project="p0", task=task))

    for task in tasks[samples:]:  # warm up the pool, the prepared statements, the model
        recall(task)
    times = []
    for task in tasks[:samples]:
        start = time.perf_counter()
        recall(task)
        times.append((time.perf_counter() - start) * 1000)
    cuts = statistics.quantiles(times, n=100, method="inclusive")
    return {"recall_p50_ms": statistics.median(times), "recall_p95_ms": cuts[94]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", type=Path, help="the other checkout")
    parser.add_argument("--template", help="a database kept by postgres_rls.py --keep")
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--measure", nargs=2, metavar=("SRC", "DB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], args.measure[1], args.samples)))
        return
    sys.path.insert(0, str(HERE))
    from postgres_ab import _copy, calibration

    sides = {
        "base": (str(args.base.resolve() / "src"), f"{args.template}_rbase"),
        "new": (str(HERE.parent / "src"), f"{args.template}_rnew"),
    }
    for _, db in sides.values():
        _copy(args.template, db)
    runs = []
    for r in range(args.rounds):
        for side in ["base", "new"] if r % 2 == 0 else ["new", "base"]:
            src, db = sides[side]
            cal = calibration()
            cmd = [sys.executable, __file__, "--measure", src, db, "--samples", str(args.samples)]
            out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, env=os.environ)
            figures = json.loads(out.stdout.strip().splitlines()[-1])
            runs.append({"round": r + 1, "side": side, "calibration_us": cal, **figures})
            print(json.dumps(runs[-1]), file=sys.stderr)
    median = {
        side: {
            k: statistics.median(float(run[k]) for run in runs if run["side"] == side)
            for k in ("calibration_us", "recall_p50_ms", "recall_p95_ms")
        }
        for side in sides
    }
    print(json.dumps({"runs": runs, "median": median}, indent=2))


if __name__ == "__main__":
    main()
