"""Two checkouts side by side on PostgreSQL: benchmarks/postgres_rls.py run alternately on the
code of another checkout (--base, e.g. a worktree at main) and on this one, each on its own
copy of one loaded database, with the calibration figure before every run (this machine is
shared: only figures of one sitting compare, and ratios more than milliseconds).

Prepare once: `.venv/bin/python benchmarks/postgres_rls.py --sizes 100000 --keep` run *in
the base checkout* (its migrations) keeps the loaded database and prints its name. Then:

    .venv/bin/python benchmarks/postgres_ab.py --base ../main --template NAME --json ab.json

copies NAME twice (the base's copy as it is, this checkout's migrated by its own `db init`)
and alternates the two for --rounds rounds, the order swapped each round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import timeit
from pathlib import Path

import psycopg
from psycopg import sql

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "postgres_rls.py"
ADMIN = os.environ.get(
    "LORESTORE_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def calibration() -> float:
    """The suite's calibration figure: µs for sum(range(1000)), fastest of 20 repeats."""
    return min(timeit.repeat("sum(range(1000))", number=2000, repeat=20)) / 2000 * 1e6


def _copy(template: str, name: str) -> None:
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(template)
            )
        )


def _url(dbname: str) -> str:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(ADMIN)
    params["dbname"] = dbname
    return make_conninfo(**params)


def _run(src: Path, dbname: str, size: int, samples: int, out: Path) -> dict[str, float]:
    env = dict(os.environ, LORESTORE_BENCH_SRC=str(src))
    cmd = [sys.executable, str(SCRIPT), "--database", dbname, "--sizes", str(size)]
    cmd += ["--samples", str(samples), "--json", str(out)]
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    figures: dict[str, float] = json.loads(out.read_text())[str(size)]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--template", required=True, help="a database loaded at base's schema")
    parser.add_argument("--size", type=int, default=100000, help="lessons in the template")
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    sides = {
        "base": (args.base.resolve() / "src", f"{args.template}_base"),
        "new": (HERE.parent / "src", f"{args.template}_new"),
    }
    _copy(args.template, sides["base"][1])
    _copy(args.template, sides["new"][1])
    sys.path.insert(0, str(HERE.parent / "src"))
    from lorestore.storage.postgres.setup import init_database

    init_database(_url(sides["new"][1]))  # this checkout's migrations on its copy
    runs: list[dict[str, object]] = []
    for r in range(args.rounds):
        order = ["base", "new"] if r % 2 == 0 else ["new", "base"]
        for side in order:
            src, db = sides[side]
            cal = calibration()
            figures = _run(src, db, args.size, args.samples, args.json.with_suffix(".part.json"))
            runs.append({"round": r + 1, "side": side, "calibration_us": cal, **figures})
            print(
                f"round {r + 1} {side}: calibration {cal:.1f} µs, write p50 "
                f"{figures['write_p50_ms']:.2f} ms ({figures['write_over_floor_p50']:.2f}x "
                f"floor), search p95 {figures['app_search_p95_ms']:.1f} ms (floor "
                f"{figures['floor_search_p95_ms']:.1f})",
                file=sys.stderr,
            )
    summary = {}
    for side in ("base", "new"):
        mine = [r for r in runs if r["side"] == side]
        summary[side] = {
            k: statistics.median(float(r[k]) for r in mine)  # type: ignore[arg-type]
            for k in mine[0]
            if k not in ("round", "side")
        }
    args.json.write_text(json.dumps({"runs": runs, "median": summary}, indent=2))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
