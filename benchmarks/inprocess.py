"""lorestore in-process: the corpus loaded through ``LessonService`` (cached per size), then
the four operations timed on the service itself and through the MCP tool adapter
(``call_tool``: argument parsing and JSON results, but no transport), beside the SQLite floor."""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.progress import Progress

import floor
from common import (
    CACHE,
    LIST_SCOPE,
    SEARCH_SCOPES,
    SEED,
    Stats,
    Subjects,
    Workload,
    interleaved,
    schema_tag,
    step,
)
from floor import Floor
from lorestore.auth.actor import Actor, local_actor
from lorestore.operations import BY_NAME
from lorestore.service import LessonService
from lorestore.storage.sqlite import SQLiteStore
from lorestore.transports.mcp.server import call_tool, local_invoker

CAP = 10_000_000  # active lessons allowed to the benchmark's owner


def cached_db(work: Workload, prog: Progress) -> tuple[Path, dict[str, Any]]:
    """The lorestore database with the corpus written through the service, built once per size
    (and per schema); the load's duration is kept beside it so cached runs still report it."""
    path = CACHE / f"lorestore-{work.size}-seed{SEED}-{schema_tag()}.db"
    meta_path = path.with_suffix(".json")
    if path.exists() and meta_path.exists():
        return path, {**json.loads(meta_path.read_text()), "cached": True}
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".loading")
    for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        leftover.unlink(missing_ok=True)
    store = SQLiteStore(tmp)
    _lift_cap(store)
    service = LessonService(store)
    actor = local_actor(session="bench-load", agent="bench")
    write = BY_NAME["memory_write"].params
    t0 = time.perf_counter()
    with step(prog, f"lorestore load {work.size:,}", work.size) as tick:
        for scope, key, value, tags in work.lessons:
            service.memory_write(actor, write(scope=scope, key=key, value=value, tags=tags))
            tick()
    seconds = time.perf_counter() - t0
    store.close()
    conn = sqlite3.connect(str(tmp))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    meta = {"seconds": seconds, "per_s": work.size / seconds, "bytes": tmp.stat().st_size,
            "loaded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}  # fmt: skip
    tmp.rename(path)
    meta_path.write_text(json.dumps(meta, indent=2))
    return path, {**meta, "cached": False}


def _lift_cap(store: SQLiteStore) -> None:
    """A cached store made before the personal store lost its default cap of 10,000 active
    lessons may still hold one: raise it so the corpus and every measured write fit."""
    with store.transaction(write=True) as tx:
        setter = getattr(tx, "set_max_active", None)
        if setter is not None:
            setter("user:local", CAP)


def copy_db(src: Path, dest_dir: Path) -> Path:
    """A private copy to measure on, so that measured writes never grow the cached file."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / "lorestore.db"
    shutil.copyfile(src, dest)
    store = SQLiteStore(dest)
    try:
        _lift_cap(store)
    finally:
        store.close()
    return dest


def _checked(result: Any) -> Any:
    if getattr(result, "is_error", False):
        raise RuntimeError(f"lorestore returned an error: {result.structured_content}")
    return result


def _equivalence(service: LessonService, actor: Actor, db: Path, work: Workload) -> dict:
    """Run the floor's search SQL on lorestore's own database and check it returns the same
    top hits as the service: the floor then does the same work, minus lorestore's layers."""
    search = BY_NAME["memory_search"].params
    floor = Floor(db)
    same, hits = 0, 0
    calls = work.calls("memory_search")[:20]
    try:
        for call in calls:
            got = [h.lesson.key for h in service.memory_search(actor, search(**call)).hits]
            same += got == floor.search_keys(call)
            hits += len(got)
    finally:
        floor.close()
    return {"queries_checked": len(calls), "same_top_hits": same, "mean_hits": hits / len(calls)}


def run(work: Workload, prog: Progress, ops: tuple[str, ...]) -> tuple[list[Stats], dict[str, Any]]:
    """Time the SQLite floor, the service and the adapter side by side, call by call, each on a
    private copy of its cached database (measured writes never reach the cache)."""
    src, load = cached_db(work, prog)
    floor_src, floor_load = floor.cached_db(work, prog, src)
    stats: list[Stats] = []
    info: dict[str, Any] = {"load": {"lorestore": load, "floor": floor_load},
                            "scope_sizes": _scope_sizes(work)}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="lorestore-inproc-") as tmp:
        floor_db = Path(tmp) / "floor.db"
        shutil.copyfile(floor_src, floor_db)
        base = Floor(floor_db)
        store = SQLiteStore(copy_db(src, Path(tmp)))
        service = LessonService(store)
        actor = local_actor(session="bench-inprocess", agent="bench")
        invoke = local_invoker(service, actor)

        def adapter(op: str) -> Callable[[dict[str, Any]], Any]:
            return lambda a: _checked(call_tool(invoke, op, a))

        try:
            for op in sorted(ops, key=lambda op: op == "memory_write"):  # writes last
                method = getattr(service, op)
                params = [BY_NAME[op].params.model_validate(c) for c in work.calls(op, batch=0)]
                subjects: Subjects = {
                    "sqlite floor": (getattr(base, op), work.calls(op, batch=0)),
                    "lorestore service": (lambda p, m=method: m(actor, p), params),
                    "lorestore adapter": (adapter(op), work.calls(op, batch=1)),
                }
                with step(prog, f"in-process {op} {work.size:,}", work.ops) as tick:
                    samples = interleaved(subjects, work.warmup, tick)
                last = adapter(op)(work.calls(op, batch=1)[-1])
                sizes = {"lorestore adapter": {"response_bytes": len(last.content[0].text)}}
                stats += [Stats("inprocess", name, op, work.size, got, sizes.get(name, {}))
                          for name, got in samples.items()]  # fmt: skip
            if "memory_search" in ops:
                info["search_equivalence"] = _equivalence(service, actor, store.path, work)
        finally:
            store.close()
            base.close()
    return stats, info


def _scope_sizes(work: Workload) -> dict[str, int]:
    wanted = [LIST_SCOPE, *SEARCH_SCOPES]
    return {s: work.scope_counts.get(s, 0) for s in dict.fromkeys(wanted)}
