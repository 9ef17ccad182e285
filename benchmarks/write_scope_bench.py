"""A write at a new key, into the corpus's largest scope (``project::p0``, about 56% of the
lessons) beside a small one (``repo::acme/svc0``): whether a write's cost grows with its
scope. p50 of 40 writes each after 5 untimed, lexical (no embedding), on a private copy of the
cached SQLite store of ``--size`` lessons, and with ``--pg-database`` as the app role on a kept
PostgreSQL database of the corpus (as ``semantic_bench.py --pg-database`` takes one; each run
adds its 90 lessons to it).

    .venv/bin/python benchmarks/write_scope_bench.py [--size 100000]
        [--postgres ADMIN_URL --pg-database NAME]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lorestore.models import WriteParams
from lorestore.service import LessonService
from lorestore.storage.protocol import Store
from recall_bench import ACTOR, _cached
from semantic_bench import calibration

SCOPES = ("project::p0", "repo::acme/svc0")
WRITES, WARMUP = 40, 5


def new_key_writes(store: Store) -> dict[str, float]:
    service = LessonService(store, rate_limit=None)
    run = uuid.uuid4().hex[:8]  # a kept database keeps earlier runs' lessons
    out: dict[str, float] = {}
    for scope in SCOPES:
        timings = []
        for i in range(WARMUP + WRITES):
            params = WriteParams(
                scope=scope, key=f"fresh-{run}-{i}", value=f"A fresh lesson {run} {i} on caches."
            )
            start = time.perf_counter_ns()
            service.memory_write(ACTOR, params)
            timings.append((time.perf_counter_ns() - start) / 1e6)
        out[f"{scope} p50_ms"] = statistics.median(timings[WARMUP:])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--postgres", metavar="ADMIN_URL")
    parser.add_argument("--pg-database")
    args = parser.parse_args()
    from lorestore.storage.sqlite import SQLiteStore

    result: dict[str, Any] = {"calibration_us": [calibration()]}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store.db"
        shutil.copyfile(_cached(args.size), path)
        sqlite = SQLiteStore(path, semantic=False)
        try:
            result["sqlite"] = new_key_writes(sqlite)
        finally:
            sqlite.close()
    if args.postgres and args.pg_database:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        from lorestore.storage.postgres import PostgresStore
        from lorestore.storage.postgres.setup import init_database

        admin = make_conninfo(**(conninfo_to_dict(args.postgres) | {"dbname": args.pg_database}))
        pg = PostgresStore(init_database(admin).app_url, max_size=2, semantic=False)
        try:
            result["postgres"] = new_key_writes(pg)
        finally:
            pg.close()
    result["calibration_us"].append(calibration())
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
