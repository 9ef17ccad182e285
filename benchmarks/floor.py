"""The SQLite floor: the four operations done directly with sqlite3 on lorestore's own
``lessons`` table, indexes and FTS5 index (copied from a migrated database), WAL and
synchronous=NORMAL. No versions, sessions, audit chain, validation or pydantic; inprocess.py
times it side by side with lorestore."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

from rich.progress import Progress

from common import CACHE, SEED, Workload, fts_match, step

OWNER = "user:local"


def schema_of(lorestore_db: Path) -> str:
    """The floor's schema, taken from a migrated lorestore database so that it follows every
    migration: the ``lessons`` table with all its indexes, the FTS5 table and the triggers
    that keep it in sync. Everything else (versions, sessions, audit, the per-owner cap
    triggers) is left out: that is lorestore's own work, which the floor does not do."""
    conn = sqlite3.connect(f"file:{lorestore_db}?mode=ro&immutable=1", uri=True)
    try:
        rows = conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL "
            "AND tbl_name IN ('lessons', 'lessons_fts') ORDER BY rowid"
        ).fetchall()
    finally:
        conn.close()
    table = [sql for kind, name, sql in rows if kind == "table" and name == "lessons"]
    indexes = [sql for kind, _, sql in rows if kind == "index"]
    fts = [sql for kind, name, sql in rows if kind == "table" and name == "lessons_fts"]
    triggers = [
        sql for kind, name, sql in rows if kind == "trigger" and name.startswith("lessons_fts")
    ]
    if not (table and fts and len(triggers) == 3):
        raise RuntimeError(f"{lorestore_db} does not have the lessons schema the floor copies")
    return ";\n".join(table + indexes + fts + triggers) + ";\n"


INSERT = (
    "INSERT INTO lessons (id, owner, scope, key, value, value_digest, tags, version, "
    "recorded_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)"
)
READ = "SELECT * FROM lessons WHERE owner = ? AND scope = ? AND key = ?"
LIST = (
    "SELECT * FROM lessons WHERE owner = ? AND scope = ? AND status = 'active' "
    "AND trust != 'rejected' ORDER BY updated_at DESC, pk DESC LIMIT ?"
)
SEARCH = (
    "SELECT l.*, bm25(lessons_fts, 4.0, 1.0, 2.0) AS rank "
    "FROM lessons_fts JOIN lessons AS l ON l.pk = lessons_fts.rowid "
    "WHERE lessons_fts MATCH ? AND l.owner = ? AND l.status = 'active' "
    "AND l.trust != 'rejected' AND l.scope IN ({}) ORDER BY rank LIMIT ?"
)


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())


def _row(scope: str, key: str, value: str, tags: list[str]) -> tuple[str, ...]:
    now = _now()
    digest = hashlib.sha256(value.encode()).hexdigest()
    return (str(uuid.uuid4()), OWNER, scope, key, value, digest, _tags(tags), now, now, now)


def _tags(tags: list[str]) -> str:
    return "[" + ",".join(f'"{t}"' for t in sorted(tags)) + "]"


def cached_db(work: Workload, prog: Progress, lorestore_db: Path) -> tuple[Path, dict[str, Any]]:
    """The floor database loaded with the corpus, built once per size and schema, then reused."""
    schema = schema_of(lorestore_db)
    tag = hashlib.sha256(schema.encode()).hexdigest()[:10]
    path = CACHE / f"floor-{work.size}-seed{SEED}-{tag}.db"
    meta_path = path.with_suffix(".json")
    if path.exists() and meta_path.exists():
        return path, {**json.loads(meta_path.read_text()), "cached": True}
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".loading")
    tmp.unlink(missing_ok=True)
    conn = connect(tmp)
    conn.executescript(schema)
    t0 = time.perf_counter()
    conn.execute("BEGIN")
    with step(prog, f"floor load {work.size:,}", work.size) as tick:
        for scope, key, value, tags in work.lessons:
            conn.execute(INSERT, _row(scope, key, value, tags))
            tick()
    conn.execute("COMMIT")
    seconds = time.perf_counter() - t0
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    meta = {"seconds": seconds, "per_s": work.size / seconds, "bytes": tmp.stat().st_size}
    tmp.rename(path)
    meta_path.write_text(json.dumps(meta, indent=2))
    return path, {**meta, "cached": False}


class Floor:
    """The four operations as plain sqlite3 calls on one connection."""

    def __init__(self, path: Path) -> None:
        self.conn = connect(path)

    def memory_write(self, a: dict[str, Any]) -> None:
        # Autocommit mode: the INSERT is its own transaction, committed at once.
        self.conn.execute(INSERT, _row(a["scope"], a["key"], a["value"], a["tags"]))

    def memory_read(self, a: dict[str, Any]) -> int:
        row = self.conn.execute(READ, (OWNER, a["scope"], a["key"])).fetchone()
        return 1 if row else 0

    def memory_list(self, a: dict[str, Any]) -> int:
        rows = self.conn.execute(LIST, (OWNER, a["scope"], a["limit"])).fetchall()
        return len(rows)

    def memory_search(self, a: dict[str, Any]) -> int:
        sql = SEARCH.format(", ".join("?" * len(a["scopes"])))
        rows = self.conn.execute(
            sql, (fts_match(a["query"]), OWNER, *a["scopes"], a["limit"])
        ).fetchall()
        return len(rows)

    def search_keys(self, a: dict[str, Any]) -> list[str]:
        """The keys the floor's search returns, best first (to check it matches lorestore's)."""
        sql = SEARCH.format(", ".join("?" * len(a["scopes"])))
        cur = self.conn.execute(sql, (fts_match(a["query"]), OWNER, *a["scopes"], a["limit"]))
        col = [d[0] for d in cur.description].index("key")
        return [row[col] for row in cur.fetchall()]

    def close(self) -> None:
        self.conn.close()
