"""`lorestore migrate` from SQLite into PostgreSQL (and, with --import, `lorestore import` of an
export into PostgreSQL): lessons per second at each size, for this checkout and a base
revision side by side in one run, beside the machine's calibration figure.

    git archive main | tar -x -C /tmp/migbase
    .venv/bin/python benchmarks/migrate_bench.py --sizes 20000,40000 --base /tmp/migbase --import

For each size a SQLite store of N lessons is built once from the benchmark corpus (a JSON
Lines file of N lessons imported by this checkout's CLI, not timed) and exported once (for
--import). Each timed run is one `lorestore` process of one side (``PYTHONPATH`` at that
side's ``src/``) into a fresh PostgreSQL database made by that side's own migrations, with
the store's default caps lifted (`lorestore db cap default none --bytes none`: the default of
10,000 lessons per owner would refuse the copy). The time is the process's wall clock; the
sides' order alternates from one size to the next. Figures go to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import timeit
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from portable_bench import write_file  # noqa: E402 - the corpus file portable_bench writes

ROOT = HERE.parent
DEFAULT_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
# Run the CLI of whichever lorestore PYTHONPATH puts first.
CLI = "import sys; sys.argv[0] = 'lorestore'; from lorestore.cli.entry import main; main()"
INIT = (
    "import sys; from lorestore.storage.postgres.setup import init_database; "
    "print(init_database(sys.argv[1]).app_url)"
)


def calibration() -> float:
    """µs per sum(range(1000)): the figure every benchmark page of this project quotes."""
    return min(timeit.repeat("sum(range(1000))", number=2000, repeat=20)) / 2000 * 1e6


def _env(src: Path, home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORESTORE_")}
    # No embedding on either side: the copy is measured, not the model.
    return (
        env
        | {"PYTHONPATH": str(src), "LORESTORE_HOME": str(home)}
        | {
            "LORESTORE_SEMANTIC": "off",
            **extra,
        }
    )


def _cli(src: Path, home: Path, args: list[str], **extra: str) -> float:
    """Run one `lorestore` command of the side at ``src``; its wall-clock seconds."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CLI, *args],
        env=_env(src, home, **extra),
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"lorestore {' '.join(args[:2])} failed:\n{done.stdout}\n{done.stderr}")
    return seconds


def _database_url(admin: str, name: str) -> str:
    """The admin URL naming another database (a URL: the CLI takes no key=value strings)."""
    return urlsplit(admin)._replace(path=f"/{name}").geturl()


def _database(admin: str, name: str, *, drop: bool = False) -> str:
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin, autocommit=True) as conn:
        if drop:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
        else:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return _database_url(admin, name)


def _target(src: Path, home: Path, admin: str, name: str) -> str:
    """A fresh database at the side's migrations, default caps lifted; its app URL."""
    url = _database(admin, name)
    done = subprocess.run(
        [sys.executable, "-c", INIT, url],
        env=_env(src, home),
        capture_output=True,
        text=True,
        check=True,
    )
    _cli(src, home, ["db", "cap", "default", "none", "--bytes", "none", "--database-url", url])
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else url


def _source(size: int, folder: Path, home: Path) -> tuple[Path, Path]:
    """The SQLite store of ``size`` corpus lessons, and its export (every version)."""
    lines, db, export = folder / "corpus.jsonl", folder / "source.db", folder / "export.jsonl"
    write_file(lines, size)
    here = ROOT / "src"
    _cli(here, home, ["import", str(lines)], LORESTORE_DATABASE_URL=f"sqlite:///{db}")
    _cli(here, home, ["export", str(export)], LORESTORE_DATABASE_URL=f"sqlite:///{db}")
    return db, export


def _run(
    side: str, src: Path, mode: str, size: int, files: tuple[Path, Path], args: Any
) -> dict[str, Any]:
    home = files[0].parent / f"home-{side}"
    home.mkdir(exist_ok=True)
    name = f"lorestore_migbench_{uuid.uuid4().hex[:10]}"
    admin_url = _database_url(args.admin, name)
    try:
        url = _target(src, home, args.admin, name)
        if mode == "migrate":
            command = ["migrate", "--from", f"sqlite:///{files[0]}", "--to", admin_url, "--json"]
            seconds = _cli(src, home, command)
        else:
            seconds = _cli(
                src,
                home,
                ["import", str(files[1]), "--json"],
                LORESTORE_DATABASE_URL=url,
                LORESTORE_USER="local",
            )
    finally:
        _database(args.admin, name, drop=True)
    return {
        "side": side,
        "mode": mode,
        "lessons": size,
        "seconds": round(seconds, 1),
        "lessons_per_s": round(size / seconds),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="20000,40000", help="lessons per store, comma-separated")
    p.add_argument("--base", type=Path, help="a checkout of the base revision (its src/ is run)")
    p.add_argument("--import", dest="import_", action="store_true", help="time import too")
    p.add_argument("--admin", default=DEFAULT_ADMIN, help="a superuser URL (PostgreSQL)")
    p.add_argument("--folder", default=tempfile.gettempdir(), help="where the stores go")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    args = p.parse_args()
    sides = {"this": ROOT / "src"}
    if args.base is not None:
        sides["base"] = args.base.resolve() / "src"
    modes = ["migrate", "import"] if args.import_ else ["migrate"]
    results: list[dict[str, Any]] = []
    for n, size in enumerate(int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(dir=args.folder) as scratch:
            folder = Path(scratch)
            files = _source(size, folder, folder)
            order = list(sides) if n % 2 == 0 else list(reversed(sides))
            for mode in modes:
                calibrated = round(calibration(), 2)
                for side in order:
                    row = _run(side, sides[side], mode, size, files, args) | {
                        "calibration_us": calibrated
                    }
                    results.append(row)
                    print(
                        f"{mode:8} {size:>7,} {side:5} {row['seconds']:>7.1f} s "
                        f"{row['lessons_per_s']:>6,}/s  (calibration {calibrated} µs)",
                        file=sys.stderr,
                        flush=True,
                    )
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
