"""Benchmark runner (``make bench``): loads the corpus at each size, times the four operations
in-process, over MCP stdio and at startup against their floors, and prints the figures.

Loaded databases are cached in benchmarks/results/cache/ per size and schema; every
measurement runs on a temporary copy, so repeated runs reuse the load and never grow it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rich.console import Console

import inprocess
import mcp_bench
import report
from common import CACHE, OPS, Stats, Workload, machine, progress, stderr

SECTIONS = ("inprocess", "mcp", "startup")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--sizes",
        default="1000,10000,100000",
        help="comma-separated corpus sizes (default: 1000,10000,100000)",
    )
    p.add_argument("--ops", type=int, default=300, help="timed samples per operation (300)")
    p.add_argument("--warmup", type=int, default=30, help="untimed calls before each (30)")
    p.add_argument("--startup-runs", type=int, default=10, help="spawns for startup (10)")
    p.add_argument(
        "--quick", action="store_true", help="1k and 10k only, 100 samples, 5 startup spawns"
    )
    p.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help="comma-separated sections: inprocess, mcp, startup (default: all)",
    )
    p.add_argument("--json", type=Path, help="write raw figures (every sample) to this file")
    p.add_argument("--markdown", type=Path, help="write the result tables as Markdown here")
    p.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        metavar="JSON",
        help="measure nothing: combine the --json files of earlier partial runs",
    )
    p.add_argument("--rebuild", action="store_true", help="discard cached loads and reload")
    args = p.parse_args(argv)
    args.sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s]
    if args.quick:
        args.sizes = [s for s in args.sizes if s <= 10_000] or [1000, 10_000]
        args.ops, args.warmup, args.startup_runs = 100, 10, 5
    args.only = tuple(s.strip() for s in args.only.split(",") if s.strip())
    unknown = set(args.only) - set(SECTIONS)
    if unknown:
        p.error(f"--only: unknown section(s) {', '.join(sorted(unknown))}")
    if args.ops < 5 or args.warmup < 2:
        p.error("--ops must be at least 5 and --warmup at least 2")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.merge:
        publish(merge(args.merge), args)
        return 0
    if args.rebuild:
        for path in CACHE.glob("*"):
            if any(f"-{size}-" in path.name for size in args.sizes):
                path.unlink()
    host = machine()
    load_start = os.getloadavg()
    stderr.print(
        f"[bold]machine[/bold] {host['cpu_count']} CPU ({host['cpu_model']}), "
        f"Python {host['python']}, SQLite {host['sqlite']}, MCP SDK {host['mcp_sdk']}"
    )
    stats: list[Stats] = []
    loads: dict[int, dict[str, Any]] = {}
    info: dict[int, dict[str, Any]] = {}
    started = time.perf_counter()
    largest_db: tuple[Path, int] | None = None
    with progress() as prog:
        for size in args.sizes:
            work = Workload(size, args.ops, args.warmup)
            loads[size] = {}
            if "inprocess" in args.only:
                lore_stats, info[size] = inprocess.run(work, prog, OPS)
                loads[size].update(info[size].pop("load"))
                stats += lore_stats
            if "mcp" in args.only or "startup" in args.only:
                db, load = inprocess.cached_db(work, prog)
                loads[size].setdefault("lorestore", load)
                largest_db = (db, size)
            if "mcp" in args.only:
                stats += mcp_bench.run(work, prog, OPS, db)
            del work
        start = None
        if "startup" in args.only:
            db, size = largest_db if largest_db else (None, None)
            start = mcp_bench.startup(prog, args.startup_runs, db, size)
    payload = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]), "machine": host,
        "pythonpath": os.environ.get("PYTHONPATH"), "seconds": time.perf_counter() - started,
        "loadavg_start": load_start, "loadavg_end": os.getloadavg(),
        "settings": {"sizes": args.sizes, "ops": args.ops, "warmup": args.warmup,
                     "startup_runs": args.startup_runs, "only": args.only},
        "loads": loads, "info": info, "startup": start,
        "results": [s.to_json() for s in stats],
    }  # fmt: skip
    publish(payload, args)
    return 0


def publish(payload: dict[str, Any], args: argparse.Namespace) -> None:
    """Print the tables, and write the Markdown and JSON files asked for."""
    stats = [
        Stats(r["section"], r["subject"], r["op"], r["size"],
              [round(us * 1000) for us in r["samples_us"]], r["extra"])
        for r in payload["results"]
    ]  # fmt: skip
    loads = {int(k): v for k, v in payload["loads"].items()}
    host, settings = payload["machine"], payload["settings"]
    out = Console(width=260)
    out.print(f"lorestore benchmarks — {host['cpu_count']} CPU {host['cpu_model']}, "
              f"Python {host['python']}, SQLite {host['sqlite']}, MCP SDK {host['mcp_sdk']}; "
              f"{settings['ops']} samples/op after {settings['warmup']} warm-up calls")  # fmt: skip
    report.render(out, stats, loads, payload["startup"])
    for size, extra in payload["info"].items():
        out.print(f"{int(size):,}: {json.dumps(extra)}")
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(report.markdown(stats, loads, payload["startup"]))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=1))
        stderr.print(f"raw figures written to {args.json}")


def merge(paths: list[Path]) -> dict[str, Any]:
    """Several partial runs (e.g. one --only/--sizes slice each) as one set of figures; a
    later file's figures replace an earlier file's for the same section, subject, op and size."""
    runs = [json.loads(p.read_text()) for p in paths]
    results: dict[tuple[str, str, str, int], dict[str, Any]] = {}
    loads: dict[str, dict[str, Any]] = {}
    info: dict[str, Any] = {}
    for run in runs:
        for r in run["results"]:
            results[(r["section"], r["subject"], r["op"], r["size"])] = r
        for size, load in run["loads"].items():
            loads.setdefault(size, {}).update(load)
        info.update(run["info"])
    return {
        "command": [run["command"] for run in runs], "machine": runs[0]["machine"],
        "pythonpath": runs[0].get("pythonpath"), "merged_from": [str(p) for p in paths],
        "settings": runs[0]["settings"], "loads": loads, "info": info,
        "startup": next((r["startup"] for r in reversed(runs) if r.get("startup")), None),
        "parts": [{k: run.get(k) for k in ("command", "seconds", "loadavg_start",
                   "loadavg_end")} for run in runs],
        "results": sorted(results.values(), key=lambda r: (r["size"], r["section"])),
    }  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
