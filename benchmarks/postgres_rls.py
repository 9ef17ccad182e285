"""PostgreSQL with forced row-level security: write cost as one owner grows from 1k to 100k
lessons (target: p50 grows at most 1.2x), read/search as the app role against a superuser on
the same data (target: at most 1.3x), and both against the raw floors (a write against one
INSERT in autocommit: at most 3x; search p95 at 100k: at most 25 ms; the search's query written
directly beside it). Run: .venv/bin/python benchmarks/postgres_rls.py; --keep keeps the loaded
database and --database NAME measures it again (benchmarks/postgres_ab.py alternates two
checkouts on one load).
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

# LORESTORE_BENCH_SRC measures another checkout's code with this script (postgres_ab.py).
sys.path.insert(
    0, os.environ.get("LORESTORE_BENCH_SRC") or str(Path(__file__).resolve().parent.parent / "src")
)
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import Corpus
from lorestore.auth.actor import local_actor
from lorestore.core.normalise import value_digest
from lorestore.core.search import query_terms, tsquery_expression
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


def _alternated(fns, samples: int) -> list[list[float]]:  # type: ignore[no-untyped-def]
    """Each function called once per sample, in turn (so a floor and its subject meet the
    same moment of this shared machine); their latencies in milliseconds."""
    out: list[list[float]] = [[] for _ in fns]
    for i in range(samples):
        for j, fn in enumerate(fns):
            start = time.perf_counter_ns()
            fn(i)
            out[j].append((time.perf_counter_ns() - start) / 1e6)
    return out


def _p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


# The raw floors, as the superuser (no row-level security) on the same table, indexes and
# triggers: one INSERT of the lesson row in autocommit, and the search's query written
# directly, the tenant a constant (its hits, the rows and the snippet in one statement).
_FLOOR_INSERT = (
    "INSERT INTO lessons (id, owner, scope, key, value, value_digest, tags, version, "
    "recorded_at, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, '[]', 1, now(), "
    "now(), now())"
)
_FLOOR_SEARCH = """
SELECT l.*, hit.score::float8 AS score,
       ts_headline('english', l.value, q, 'StartSel=[, StopSel=], MaxWords=16, MinWords=6,
           MaxFragments=1') AS snippet
FROM to_tsquery('english', lorestore_fold(%(match)s)) AS q,
     LATERAL (SELECT h.pk, ts_rank_cd(h.search, q) AS score FROM lessons AS h
              WHERE h.search @@ q AND h.owner = %(owner)s AND h.scope = ANY (%(scopes)s)
                AND h.status = 'active' AND h.trust <> 'rejected'
                AND (h.expires_at IS NULL OR h.expires_at > now())
              ORDER BY score DESC, h.pk LIMIT 10) AS hit
JOIN lessons AS l ON l.pk = hit.pk
ORDER BY hit.score DESC, l.pk
"""


def _figures(prefix: str, values: list[float]) -> dict[str, float]:
    return {f"{prefix}_p{q}_ms": _p(values, q) for q in (50, 95, 99)}


def _measure(
    dbname: str, n: int, samples: int, queries: list[str], *, load: bool = True
) -> dict[str, float]:
    addresses = _load(dbname, n) if load else _addresses(n)
    app = LessonService(PostgresStore(_url(dbname, user="lorestore_app")), rate_limit=None)
    sup = LessonService(PostgresStore(_url(dbname)), rate_limit=None)
    raw = psycopg.connect(_url(dbname), autocommit=True)
    run = uuid.uuid4().hex[:8]  # a reused database keeps earlier runs' writes
    scopes = ["global", "project::p0", "repo::acme/svc0"]
    terms = [tsquery_expression(list(query_terms(q))) for q in queries]
    try:
        for i in range(20):  # warm up pools and prepared statements
            app.memory_read(ACTOR, ReadParams(scope=addresses[0][0], key=addresses[0][1]))
            app.memory_search(ACTOR, SearchParams(query=queries[-1 - i], scopes=scopes))
            raw.execute(_FLOOR_SEARCH, {"match": terms[-1 - i], "owner": OWNER, "scopes": scopes})

        def write(i: int) -> None:
            value = f"fresh lesson {i} about caches"
            app.memory_write(
                ACTOR, WriteParams(scope="repo::acme/svc0", key=f"new-{run}-{i}", value=value)
            )

        def floor_write(i: int) -> None:
            value = f"fresh lesson {i} about caches"
            key = f"floor-{run}-{i}"
            raw.execute(
                _FLOOR_INSERT,
                (str(uuid.uuid4()), OWNER, "repo::acme/svc0", key, value, value_digest(value)),
            )

        writes, floor_writes = _alternated([write, floor_write], samples)
        figures = _figures("write", writes) | _figures("floor_write", floor_writes)
        figures["write_over_floor_p50"] = figures["write_p50_ms"] / figures["floor_write_p50_ms"]

        def floor_search(i: int) -> None:
            raw.execute(
                _FLOOR_SEARCH, {"match": terms[i], "owner": OWNER, "scopes": scopes}
            ).fetchall()

        def search_as(s: LessonService):  # type: ignore[no-untyped-def]
            def search(i: int) -> None:
                s.memory_search(ACTOR, SearchParams(query=queries[i], scopes=scopes))

            return search

        app_s, sup_s, floor_s = _alternated([search_as(app), search_as(sup), floor_search], samples)
        figures |= (
            _figures("app_search", app_s)
            | _figures("superuser_search", sup_s)
            | _figures("floor_search", floor_s)
        )
        for name, service in (("app", app), ("superuser", sup)):

            def read(i: int, s: LessonService = service) -> None:
                scope, key = addresses[i * 7919 % n]
                s.memory_read(ACTOR, ReadParams(scope=scope, key=key))

            figures |= _figures(f"{name}_read", _timed(read, samples))
    finally:
        app.store.close()
        sup.store.close()
        raw.close()
    figures["read_rls_overhead"] = figures["app_read_p50_ms"] / figures["superuser_read_p50_ms"]
    figures["search_rls_overhead"] = (
        figures["app_search_p50_ms"] / figures["superuser_search_p50_ms"]
    )
    figures["search_over_floor_p95"] = figures["app_search_p95_ms"] / figures["floor_search_p95_ms"]
    return figures


def _addresses(n: int) -> list[tuple[str, str]]:
    """The addresses ``_load`` wrote, for a database loaded by an earlier run."""
    return [(scope, key) for scope, key, _, _ in Corpus(seed=7).lessons(n)]


def run(sizes: list[int], samples: int, *, keep: bool = False) -> dict[str, object]:
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
            if keep:
                print(f"kept {dbname}", file=sys.stderr)
            else:
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
    parser.add_argument(
        "--database",
        help="measure a database an earlier run loaded (kept by --keep), of --sizes lessons",
    )
    parser.add_argument("--keep", action="store_true", help="keep the loaded database")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.database:
        queries = list(Corpus(seed=11).queries(args.samples))
        figures: dict[str, object] = {
            str(sizes[0]): _measure(args.database, sizes[0], args.samples, queries, load=False)
        }
    else:
        figures = run(sizes, args.samples, keep=args.keep)
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)


if __name__ == "__main__":
    main()
