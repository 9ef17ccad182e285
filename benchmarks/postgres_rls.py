"""PostgreSQL with forced row-level security: write cost as one owner grows from 1k to 100k
lessons (target: p50 grows at most 1.2x), and read/search as the app role against a
superuser on the same data (target: at most 1.3x). Run: .venv/bin/python benchmarks/postgres_rls.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import Corpus
from lorestore.auth.actor import local_actor
from lorestore.core.normalise import value_digest
from lorestore.models import ReadParams, SearchParams, WriteParams
from lorestore.service import LessonService
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.postgres.setup import init_database

ADMIN = os.environ.get(
    "LORESTORE_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
OWNER = "user:bench"
ACTOR = local_actor(principal=OWNER, session="bench")


def _url(dbname: str, **changes: str) -> str:
    params = conninfo_to_dict(ADMIN)
    params["dbname"] = dbname
    if "user" in changes:
        params.pop("password", None)
    params.update(changes)
    return make_conninfo(**params)


def _load(dbname: str, n: int) -> list[tuple[str, str]]:
    """Bulk-load n corpus lessons (with a version each) for one owner, as the superuser."""
    rows = list(Corpus(seed=7).lessons(n))
    now = "2026-11-30T00:00:00Z"
    with psycopg.connect(_url(dbname)) as conn:
        conn.execute(
            "INSERT INTO principals (id, kind, name) VALUES (%s, 'user', 'bench') "
            "ON CONFLICT DO NOTHING",
            [OWNER],
        )
        conn.execute("UPDATE owner_stats SET max_active = 1000000 WHERE owner = %s", [OWNER])
        conn.execute(
            "INSERT INTO owner_stats (owner, max_active) VALUES (%s, 1000000) "
            "ON CONFLICT (owner) DO UPDATE SET max_active = 1000000",
            [OWNER],
        )
        with conn.cursor().copy(
            "COPY lessons (owner, id, scope, key, value, value_digest, tags, version, "
            "recorded_at, created_at, updated_at) FROM STDIN"
        ) as copy:
            for scope, key, value, tags in rows:
                copy.write_row(
                    (
                        OWNER,
                        str(uuid.uuid4()),
                        scope,
                        key,
                        value,
                        value_digest(value),
                        json.dumps(tags),
                        1,
                        now,
                        now,
                        now,
                    )
                )
        conn.execute(
            "INSERT INTO lesson_versions (owner, lesson_pk, version, value, value_digest, tags, "
            "recorded_at, actor) SELECT owner, pk, 1, value, value_digest, tags, recorded_at, "
            "owner FROM lessons"
        )
        conn.execute("ANALYZE")
    return [(scope, key) for scope, key, _, _ in rows]


def _timed(fn, samples: int) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for i in range(samples):
        start = time.perf_counter_ns()
        fn(i)
        out.append((time.perf_counter_ns() - start) / 1e6)
    return out


def _p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def _measure(dbname: str, n: int, samples: int, queries: list[str]) -> dict[str, float]:
    addresses = _load(dbname, n)
    app = LessonService(PostgresStore(_url(dbname, user="lorestore_app")), rate_limit=None)
    sup = LessonService(PostgresStore(_url(dbname)), rate_limit=None)
    try:
        for _ in range(20):  # warm up pools and prepared statements
            app.memory_read(ACTOR, ReadParams(scope=addresses[0][0], key=addresses[0][1]))

        def write(i: int) -> None:
            value = f"fresh lesson {i} about caches"
            app.memory_write(
                ACTOR, WriteParams(scope="repo::acme/svc0", key=f"new-{i}", value=value)
            )

        writes = _timed(write, samples)
        figures = {"write_p50_ms": _p(writes, 50), "write_p95_ms": _p(writes, 95)}
        for name, service in (("app", app), ("superuser", sup)):

            def read(i: int, s: LessonService = service) -> None:
                scope, key = addresses[i * 7919 % n]
                s.memory_read(ACTOR, ReadParams(scope=scope, key=key))

            def search(i: int, s: LessonService = service) -> None:
                scopes = ["global", "project::p0", "repo::acme/svc0"]
                s.memory_search(ACTOR, SearchParams(query=queries[i], scopes=scopes))

            figures[f"{name}_read_p50_ms"] = _p(_timed(read, samples), 50)
            figures[f"{name}_search_p50_ms"] = _p(_timed(search, samples), 50)
    finally:
        app.store.close()
        sup.store.close()
    figures["read_rls_overhead"] = figures["app_read_p50_ms"] / figures["superuser_read_p50_ms"]
    figures["search_rls_overhead"] = (
        figures["app_search_p50_ms"] / figures["superuser_search_p50_ms"]
    )
    return figures


def run(sizes: list[int], samples: int) -> dict[str, object]:
    results: dict[str, object] = {}
    queries = list(Corpus(seed=11).queries(samples))
    for n in sizes:
        dbname = f"lorestore_bench_{n}_{uuid.uuid4().hex[:6]}"
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
        try:
            init_database(_url(dbname))
            figures = _measure(dbname, n, samples, queries)
            results[str(n)] = figures
            print(n, json.dumps({k: round(v, 3) for k, v in figures.items()}), file=sys.stderr)
        finally:
            with psycopg.connect(ADMIN, autocommit=True) as conn:
                conn.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                        sql.Identifier(dbname)
                    )
                )
    if len(sizes) > 1:
        first, last = results[str(sizes[0])], results[str(sizes[-1])]
        results["write_growth"] = last["write_p50_ms"] / first["write_p50_ms"]  # type: ignore[index]
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    figures = run([int(s) for s in args.sizes.split(",")], args.samples)
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)


if __name__ == "__main__":
    main()
