"""Where the time goes: micro-measurements behind the notes in docs/benchmarks.md (the search
SQL's shape, decoding rows into pydantic Lessons, the SDK client's output-schema check).

Run after run.py has cached a load: ``.venv/bin/python benchmarks/explain.py --size 100000``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jsonschema import exceptions, validators

from common import CACHE, LIST_SCOPE, SEARCH_SCOPES, SEED, fts_match, schema_tag
from corpus import Corpus
from lorestore.auth.actor import local_actor
from lorestore.core.records import Lesson
from lorestore.models import ListParams
from lorestore.operations import BY_NAME
from lorestore.service import LessonService
from lorestore.storage.rows import lesson_from_row
from lorestore.storage.sql.lessons import NO_BOUND
from lorestore.storage.sqlite import SQLiteStore
from lorestore.storage.sqlite.store import Q
from lorestore.transports.mcp.server import call_tool, local_invoker, tool_definitions

BM25_ORDERED = (
    Q["search"]
    .replace(" AND rank MATCH 'bm25(4.0, 1.0, 2.0)'", "")
    .replace("ORDER BY rank", "ORDER BY bm25(lessons_fts, 4.0, 1.0, 2.0)")
)
NO_SNIPPET = Q["search"].replace("snippet(lessons_fts, 1, '[', ']', '…', 16)", "''")
assert "rank MATCH" not in BM25_ORDERED and "ORDER BY bm25" in BM25_ORDERED, (
    "the search query changed shape"
)
assert Q["search"] != NO_SNIPPET, "the search query changed shape"


def percentiles(fn: Callable[[Any], object], args: list[Any], warm: int = 20) -> str:
    for a in args[:warm]:
        fn(a)
    ts = []
    for a in args:
        t0 = time.perf_counter_ns()
        fn(a)
        ts.append(time.perf_counter_ns() - t0)
    ts.sort()
    return f"p50 {ts[len(ts) // 2] / 1e3:8.0f} µs   p95 {ts[int(len(ts) * 0.95)] / 1e3:8.0f} µs"


def sql_params(**values: Any) -> dict[str, Any]:
    """Every named parameter lorestore's queries have used, so a query text taken from
    queries.sql runs as is (sqlite3 looks up only the names a statement uses)."""
    owner = "user:local"
    return {
        "owner": owner, "owners": json.dumps([owner]), "scopes": json.dumps(SEARCH_SCOPES),
        "addresses": json.dumps([f"{owner}\x1f{s}" for s in SEARCH_SCOPES]),
        "now": "2000-01-01T00:00:00.000000Z", "tags": "[]", "ntags": 0,
        "after_at": None, "after_pk": None, "since": 0, "before": NO_BOUND,
    } | values  # fmt: skip


def search_sql(conn: sqlite3.Connection, queries: list[str]) -> None:
    print("\n== search SQL on lorestore's schema (executed directly, no Python layers)")
    params = [sql_params(match=fts_match(q), find=fts_match(q), limit=10) for q in queries]
    matches = sorted(
        conn.execute("SELECT count(*) FROM lessons_fts WHERE lessons_fts MATCH ?",
                     (p["match"],)).fetchone()[0] for p in params
    )  # fmt: skip
    print(f"matching documents per query: median {matches[len(matches) // 2]}, "
          f"p95 {matches[int(len(matches) * 0.95)]}")  # fmt: skip
    shapes = {
        "as shipped (ORDER BY rank, snippet)": Q["search"],
        "same without snippet()": NO_SNIPPET,
        "ORDER BY bm25(...), the floor's way": BM25_ORDERED,
    }
    hits = {}
    for label, sql in shapes.items():
        line = percentiles(lambda p, s=sql: conn.execute(s, p).fetchall(), params)
        print(f"  {label:45s} {line}")
        hits[label] = [[r["pk"] for r in conn.execute(sql, p)] for p in params]
    base = hits[next(iter(shapes))]
    for label, got in list(hits.items())[1:]:
        same = sum(a == b for a, b in zip(base, got, strict=True))
        print(f"  same hits as shipped, {label}: {same}/{len(base)}")
    plan = conn.execute("EXPLAIN QUERY PLAN " + Q["search"], params[0]).fetchall()
    print("  shipped plan: " + "; ".join(r[3] for r in plan if "TEMP" in r[3] or "SCAN" in r[3]))


def row_decoding(conn: sqlite3.Connection) -> None:
    print(f"\n== memory_list's rows ({LIST_SCOPE}: 50 and the look-ahead): fetch vs decode 50")
    p = sql_params(scope=LIST_SCOPE, limit=51)
    rows = conn.execute(Q["list_lessons"], p).fetchall()
    n = list(range(200))
    fetch = percentiles(lambda _: conn.execute(Q["list_lessons"], p).fetchall(), n)
    decode = percentiles(lambda _: [_decode(r) for r in rows[:50]], n)
    print(f"  fetch 51 rows (sqlite3.Row)     {fetch}")
    print(f"  decode 50 rows into Lessons     {decode}")


def _decode(row: sqlite3.Row) -> Lesson:
    """A row as the store decodes it: a JSON record built in SQL (the lesson_docs view), or
    the columns one by one (before that view existed)."""
    if "doc" in row.keys():  # noqa: SIM118 - sqlite3.Row iterates values, not names
        return Lesson.__pydantic_validator__.validate_json(row["doc"])  # as the store does
    return lesson_from_row(row)


def schema_check(service: LessonService, queries: list[str]) -> None:
    print("\n== the SDK client's output-schema check of one result (jsonschema), by schema form")
    actor = local_actor(session="explain")
    tools = {t.name: t for t in tool_definitions()}
    cases = {
        "memory_read": {"scope": LIST_SCOPE, "key": "lesson-0000001"},
        "memory_list": {"scope": LIST_SCOPE, "limit": 50},
        "memory_search": {"query": queries[0], "scopes": SEARCH_SCOPES, "limit": 10},
    }
    for name, args in cases.items():
        result = call_tool(local_invoker(service, actor), name, args)
        payload, declared = result.structured_content, tools[name].output_schema
        wire = len(result.model_dump_json(by_alias=True, exclude_none=True)) / 1024
        text = len(result.content[0].text) / 1024
        print(f"  {name}: {wire:.1f} KiB on the wire (text copy {text:.1f} KiB + structured copy)")
        own = BY_NAME[name].result.model_json_schema(mode="serialization")
        forms = {
            "pydantic's own ($ref, anyOf)": own,
            "as declared (inlined, type lists)": declared,
        }
        for label, schema in forms.items():
            v = validators.validator_for(schema)(schema)
            line = percentiles(
                lambda _, v=v, doc=payload: exceptions.best_match(v.iter_errors(doc)),
                list(range(30)), warm=3,
            )  # fmt: skip
            print(f"    {label:34s} {line}")
    print("\n== decoding a list page into Lessons, for comparison with the floor's tuples")
    page = ListParams(scope=LIST_SCOPE, limit=50)
    line = percentiles(lambda _: service.memory_list(actor, page), list(range(200)))
    print(f"  service.memory_list             {line}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=100_000, help="a size run.py has cached")
    p.add_argument("--queries", type=int, default=200)
    args = p.parse_args()
    cached = CACHE / f"lorestore-{args.size}-seed{SEED}-{schema_tag()}.db"
    if not cached.exists():
        raise SystemExit(f"no cached load at {cached}; run benchmarks/run.py --sizes {args.size}")
    queries = list(Corpus(seed=SEED).queries(args.queries))
    with tempfile.TemporaryDirectory(prefix="lorestore-explain-") as tmp:
        db = Path(tmp) / "lorestore.db"
        shutil.copyfile(cached, db)
        conn = sqlite3.connect(db)
        conn.row_factory = sqlite3.Row
        if "lesson_docs" in Q:  # a per-connection view the read queries select from
            conn.execute(Q["lesson_docs"])
        print(f"lorestore DB of {args.size:,} lessons; SQLite {sqlite3.sqlite_version}")
        search_sql(conn, queries)
        row_decoding(conn)
        conn.close()
        store = SQLiteStore(db)
        try:
            schema_check(LessonService(store), queries)
        finally:
            store.close()


if __name__ == "__main__":
    main()
