"""Server time of each dashboard page at 100k lessons: the real application in process (the
same ASGI app ``lorestore serve`` runs), a signed-in admin, each page timed from the request
entering the application to its last body byte, the pages interleaved round by round (a busy
moment of the shared machine falls on all of them), beside the REST ``memory_list`` of the same
server and the machine's calibration figure. Figures go to docs/benchmarks.md by hand.

    .venv/bin/python benchmarks/dashboard_bench.py [--size 100000] [--ops 200]
    .venv/bin/python benchmarks/dashboard_bench.py --postgres postgresql://postgres@127.0.0.1/postgres

The SQLite corpus is the suite's cached one (benchmarks/results/cache/, written through the
service); with ``--postgres`` it is copied by ``lorestore migrate`` into a throwaway database
of that server, which the app then reads as the application role. The verification of the
hash chains, which the Audit page's button runs in the background, is timed apart
(``chain_verification_s``). The code measured is the ``lorestore`` Python imports (this
checkout's, installed editable): for another revision, run its own copy of this script with
``PYTHONPATH=ITS/src``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import subprocess
import sys
import tempfile
import time
import timeit
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from starlette.testclient import TestClient

from common import Stats, Workload, progress, stderr
from inprocess import cached_db, copy_db
from lorestore.auth.actor import local_actor
from lorestore.config import load_settings
from lorestore.models import (
    DisputeParams,
    ListParams,
    NoParams,
    RecallParams,
    TokenCreateParams,
    VerifyParams,
    WriteParams,
)
from lorestore.service import LessonService
from lorestore.transports import settle_heap
from lorestore.transports.http.app import build_app

ORIGIN = "http://testserver"
SCOPE = "project::p0"  # the corpus's busiest scope (about half of all lessons)
# The Lessons page's searches, by how many of the 100k corpus's lessons hold the word (fixed
# words: the corpus is the same at every run): every lesson ("Lesson N: ..."), 97 % and 46 %
# of them (tech words of the corpus's vocabulary), and 2.5 % (an invented word).
SEARCHES = {"100 %": "Lesson", "97 %": "migration", "46 %": "webhook", "2.5 %": "topeqite"}


def calibration() -> float:
    """µs per sum(range(1000)): the figure every benchmark page of this project quotes."""
    return min(timeit.repeat("sum(range(1000))", number=2000, repeat=20)) / 2000 * 1e6


class ServerClock:
    """ASGI wrapper: the time from a request entering the app to its last body byte sent."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.last_ns = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        start = time.perf_counter_ns()

        async def timed_send(message: Any) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                self.last_ns = time.perf_counter_ns() - start

        await self.app(scope, receive, timed_send)


def review_work(service: LessonService) -> dict[str, str]:
    """What the review pages show: disputes, verified lessons with proposals, a second version
    of one lesson, and recalls; returns the addresses and ids the pages are opened with."""
    me = local_actor(session="bench-review")
    lessons = service.memory_list(me, ListParams(scope=SCOPE, limit=100)).lessons
    for lesson in lessons[:30]:
        service.memory_dispute(me, DisputeParams(scope=SCOPE, key=lesson.key, reason="bench"))
    for lesson in lessons[30:50]:
        service.memory_verify(me, VerifyParams(scope=SCOPE, key=lesson.key))
        value = lesson.value + " (revised)"
        service.memory_write(me, WriteParams(scope=SCOPE, key=lesson.key, value=value))
    target = lessons[60]
    service.memory_write(
        me, WriteParams(scope=SCOPE, key=target.key, value=target.value + "\n\nSecond version.")
    )
    recall_id = ""
    for n in range(200):
        task = f"bench task {n} {target.value.split()[0]}"
        recall_id = service.memory_recall(me, RecallParams(project="p0", task=task)).recall_id
    return {"key": target.key, "recall_id": recall_id}


def pages(work: dict[str, str]) -> dict[str, str]:
    key = work["key"]
    return {
        "overview": "/overview",
        "lessons (scope)": f"/lessons?scope={SCOPE}",
        "lessons (prefix, seen)": "/lessons?scope=project::&sort=seen",
        "lessons (prefix, trust)": "/lessons?scope=project::&trust=disputed",
        **{
            f"lessons (search, {share})": f"/lessons?scope=project::&q={word}"
            for share, word in SEARCHES.items()
        },
        "lesson": f"/lesson?scope={SCOPE}&key={key}",
        "review": "/review",
        "recall": f"/recall?id={work['recall_id']}",
        "audit": "/audit",
        "admin": "/admin",
        "REST memory_list": f"/api/v1/memory_list?scope={SCOPE}",
    }


def measure(service: LessonService, ops: int, warmup: int) -> list[Stats]:
    settings = dataclasses.replace(
        load_settings(), maintenance_hours=None, rate_limit=None, dashboard_origin=ORIGIN
    )
    service.rate_limit = None  # a thousand page views a minute are the benchmark's, not abuse
    token = service.token_create(
        local_actor(), TokenCreateParams.model_validate({"name": "bench", "permission": "admin"})
    ).token
    app = ServerClock(build_app(service, settings))
    targets = pages(review_work(service))
    samples: dict[str, list[int]] = {name: [] for name in targets}
    with TestClient(app, base_url=ORIGIN) as client:
        form = client.get("/signin").text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', form)
        assert csrf, "no sign-in form"
        signed = client.post("/signin", data={"token": token, "csrf_token": csrf.group(1)})
        assert signed.status_code == 200, signed.text
        bearer = {"Authorization": f"Bearer {token}"}
        # As `lorestore serve` once it listens: what start-up keeps (here also the corpus work
        # above) frozen out of the collector's walks. Without it a full collection of this
        # process's heap (50-55 ms) fell on a page view now and then: the Lesson page's p95
        # 60-73 ms against a p50 of 8-18.
        settle_heap()
        names = list(targets)
        for i in range(warmup + ops):
            k = i % len(names)
            for name in names[k:] + names[:k]:
                headers = bearer if name.startswith("REST") else {}
                answer = client.get(targets[name], headers=headers, follow_redirects=False)
                if answer.status_code != 200:
                    raise RuntimeError(f"{name}: {answer.status_code} {answer.text[:300]}")
                if i >= warmup:
                    samples[name].append(app.last_ns)
    return [Stats("dashboard", "server", name, 0, s) for name, s in samples.items()]


def verification(service: LessonService, runs: int = 3) -> list[float]:
    """Seconds each of ``runs`` verifications of the hash chains takes: the work the Audit
    page's button starts in the background (web/chains.py), not a page view."""
    seconds = []
    for _ in range(runs):
        began = time.perf_counter()
        assert service.audit_verify(local_actor(), NoParams()).ok
        seconds.append(round(time.perf_counter() - began, 3))
    return seconds


def postgres_copy(sqlite_db: Path, admin: str, keep: str | None = None) -> tuple[str, str]:
    """A database on ``admin``'s server, set up by ``db init`` and filled by ``lorestore
    migrate`` from the SQLite corpus (throwaway, or named ``keep`` and kept: a database of that
    name that exists already is only brought to this code's migrations, not filled again);
    returns its name and the app role's URL."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from lorestore.storage.postgres.setup import init_database

    name = keep or f"lorestore_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if found is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    params = conninfo_to_dict(admin) | {"dbname": name}
    report = init_database(make_conninfo(**params))
    if found is not None:
        analyze(make_conninfo(**params))
        return name, report.app_url
    host = params.get("host", "127.0.0.1")
    port = params.get("port", "5432")
    target = f"postgresql://{params.get('user', 'postgres')}@{host}:{port}/{name}"
    exe = str(Path(sys.executable).parent / "lorestore")
    copied = subprocess.run(
        [exe, "migrate", "--from", f"sqlite:///{sqlite_db}", "--to", target],
        capture_output=True,
        text=True,
        check=False,
    )
    if copied.returncode != 0:
        raise RuntimeError(f"lorestore migrate failed: {copied.stderr[-2000:]}")
    analyze(make_conninfo(**params))
    return name, report.app_url


def analyze(url: str) -> None:
    """The planner's statistics, as autovacuum gathers them a little after a bulk load: without
    them a freshly filled database plans every read as if its tables were empty."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")


def drop(admin: str, name: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--ops", type=int, default=200, help="timed views of each page (200)")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--postgres", help="a superuser URL: measure PostgreSQL instead of SQLite")
    p.add_argument(
        "--database",
        help="with --postgres: the corpus's database, kept after the run and reused by the "
        "next (created and filled if missing; brought to this code's migrations if not)",
    )
    args = p.parse_args()
    with progress() as prog:
        src, load = cached_db(Workload(args.size, 1, 0), prog)
    with tempfile.TemporaryDirectory(prefix="lorestore-dash-") as tmp:
        db = copy_db(src, Path(tmp))
        dropped = None
        if args.postgres:
            from lorestore.storage.postgres import PostgresStore

            dropped, app_url = postgres_copy(db, args.postgres, args.database)
            if args.database:
                dropped = None
            service = LessonService(PostgresStore(app_url, max_size=4))
            backend = "postgresql"
        else:
            from lorestore.storage.sqlite import SQLiteStore

            service = LessonService(SQLiteStore(db))
            backend = "sqlite"
        before = calibration()
        stats = measure(service, args.ops, args.warmup)
        verifying = verification(service)
        after = calibration()
        service.store.close()
        if dropped is not None:
            drop(args.postgres, dropped)
    report = {
        "backend": backend,
        "lessons": args.size,
        "views_per_page": args.ops,
        "calibration_us": [round(before, 2), round(after, 2)],
        "pages": {s.op: {"p50_ms": round(s.p50, 2), "p95_ms": round(s.p95, 2)} for s in stats},
        "chain_verification_s": verifying,
    }
    print(json.dumps(report, indent=2))
    stderr.print(f"corpus load: {load}")


if __name__ == "__main__":
    main()
