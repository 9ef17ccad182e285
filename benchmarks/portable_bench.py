"""Import and export of 100k lessons on SQLite (issue 7): lessons per second, and the peak
memory of each phase, measured honestly in a fresh child process of its own (its
``ru_maxrss`` at exit: the interpreter, lorestore and the work, nothing of the parent).

    .venv/bin/python benchmarks/portable_bench.py                 # 100,000 lessons
    .venv/bin/python benchmarks/portable_bench.py --lessons 20000 --json

Phases: a JSON Lines file of N lessons is written from the benchmark corpus (not timed);
``import`` loads it into a fresh SQLite store; ``reimport`` loads it again (every lesson
unchanged: the idempotency check); ``export`` writes the store back out with every version.
Each runs ``LessonService.memory_import`` / ``memory_export`` as the CLI does, in a child
process. Targets: >= 10,000 lessons/s, peak RSS < 200 MB.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import Corpus

TARGET_RATE = 10_000
TARGET_RSS_MB = 200
CHUNK = 1024 * 1024


def write_file(path: Path, lessons: int) -> None:
    from lorestore.portable.jsonl import encode, header

    at = "2026-01-01T12:00:00.000000Z"
    with path.open("wb") as out:
        out.write(encode(header(at)))
        for scope, key, value, tags in Corpus(seed=7).lessons(lessons):
            record = {
                "type": "lesson",
                "id": str(uuid.uuid5(uuid.NAMESPACE_URL, key)),
                "scope": scope,
                "key": key,
                "value": value,
                "tags": sorted(tags),
                "version": 1,
                "recorded_at": at,
                "created_at": at,
                "updated_at": at,
                "source": {"agent": "bench"},
            }
            out.write(encode(record))


def _service(db: Path) -> Any:
    from lorestore.service import LessonService
    from lorestore.storage.sqlite import SQLiteStore

    store = SQLiteStore(db)
    with store.transaction(write=True, actor="user:local") as tx:
        tx.set_max_active("user:local", 10_000_000)  # whatever cap the store was made with
    return LessonService(store, rate_limit=None)


def run_import(db: Path, source: Path) -> dict[str, Any]:
    from lorestore.auth.actor import local_actor
    from lorestore.portable.jsonl import read_records
    from lorestore.portable.models import ImportParams

    service = _service(db)

    def chunks() -> Any:
        with source.open("rb") as stream:
            while chunk := stream.read(CHUNK):
                yield chunk

    started = time.perf_counter()
    result = service.memory_import(local_actor(), ImportParams(), read_records(chunks()))
    seconds = time.perf_counter() - started
    service.store.close()
    lessons = result.lessons
    assert result.invalid == 0 and lessons.refused == 0, result.problems[:3]
    return {"seconds": seconds, "added": lessons.added, "unchanged": lessons.unchanged}


def run_export(db: Path, target: Path) -> dict[str, Any]:
    from lorestore.auth.actor import local_actor
    from lorestore.portable.models import ExportParams

    service = _service(db)
    started = time.perf_counter()
    export = service.memory_export(local_actor(), ExportParams())
    with target.open("wb") as out:
        for chunk in export.chunks():
            out.write(chunk)
    seconds = time.perf_counter() - started
    service.store.close()
    return {"seconds": seconds, "lessons": export.counts["lesson"], "bytes": target.stat().st_size}


def child(phase: str, db: Path, path: Path) -> None:
    """Run one phase and print its figures with this process's peak RSS."""
    figures = run_import(db, path) if phase in ("import", "reimport") else run_export(db, path)
    figures["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(figures))


def phase(name: str, db: Path, path: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", name, "--db", str(db), "--path", str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lessons", type=int, default=100_000)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--child", choices=["import", "reimport", "export"])
    parser.add_argument("--db", type=Path)
    parser.add_argument("--path", type=Path)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.db, args.path)
        return
    with tempfile.TemporaryDirectory(prefix="lorestore-portable-") as scratch:
        folder = Path(scratch)
        source, db, out = folder / "in.jsonl", folder / "store.db", folder / "out.jsonl"
        write_file(source, args.lessons)
        report = {"lessons": args.lessons, "file_mb": round(source.stat().st_size / 2**20, 1)}
        for name in ("import", "reimport", "export"):
            figures = phase(name, db, out if name == "export" else source)
            figures["lessons_per_s"] = round(args.lessons / figures["seconds"])
            figures["seconds"] = round(figures["seconds"], 2)
            figures["peak_rss_mb"] = round(figures["peak_rss_mb"], 1)
            figures["meets_targets"] = (
                figures["lessons_per_s"] >= TARGET_RATE and figures["peak_rss_mb"] < TARGET_RSS_MB
            )
            report[name] = figures
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{args.lessons} lessons, {report['file_mb']} MB of JSON Lines")
    for name in ("import", "reimport", "export"):
        f = report[name]
        print(
            f"{name:9} {f['seconds']:7.2f} s  {f['lessons_per_s']:>7} lessons/s  "
            f"peak RSS {f['peak_rss_mb']:6.1f} MB  {'ok' if f['meets_targets'] else 'MISSED'}"
        )


if __name__ == "__main__":
    main()
