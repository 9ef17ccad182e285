"""Start-up beside LoreKit's CLI: ``lorestore --help`` / ``--version``, one-shot ``read``,
``list``, ``search`` and ``recall`` on the embedded store, and ``lorestore mcp`` from spawn to
its first ``tools/list`` answer, each run interleaved with LoreKit's nearest command in local
mode (``show``, ``list``, ``search``, ``list``, ``mcp``) on the same lessons; and the floors
under them: a bare SDK server (``mcp-sdk``), the interpreter alone (``python``) and the
interpreter importing the libraries every operation command uses (``cli-stack``).

The machine is shared, so the figures that travel are the ratios of runs taken side by side:
each round runs every subject once, in a rotating order, and the report gives median and p90
wall time of each, the ratio of the medians and the median of the per-round ratios, with the
calibration figure (``sum(range(1000))``, in µs) before and after. ``--importtime`` adds where
each lorestore command's imports go, from ``python -X importtime``.

    .venv/bin/python benchmarks/startup_bench.py [--runs 20] [--json out.json] [--importtime]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import HERE, ROOT, VENV_BIN, machine

LOREKIT = ROOT.parent / "shared" / "peers" / "lorekit-cli" / "bin" / "lorekit.mjs"
CALIBRATION = (
    "import timeit;print(min(timeit.repeat('sum(range(1000))',number=2000,repeat=20))/2000*1e6)"
)
REPO = "acme/widget"
TASK = "change the build flags and the release guard"
# (scope, key, value): the same lessons in both stores (LoreKit's files, imported by lorestore).
LESSONS = [
    ("global" if i % 2 else f"repo::{REPO}", f"lesson-{i:02d}",
     f"Lesson {i}: prefer guard clauses, pin build flags, keep release notes short (#{i}).")
    for i in range(20)
]  # fmt: skip
READ_KEY = "lesson-01"  # in global
STACK = "import sqlite3, typer, rich.console; from pydantic import BaseModel"


def subjects(lorestore: str, node: str) -> dict[str, tuple[list[str], list[str] | None]]:
    """Each command: lorestore's argv and LoreKit's nearest one (None: none to compare)."""
    lk = [node, str(LOREKIT)]
    return {
        "--help": ([lorestore, "--help"], [*lk, "--help"]),
        "--version": ([lorestore, "--version"], [*lk, "--version"]),
        "read": ([lorestore, "read", "global", READ_KEY], [*lk, "show", f"global::{READ_KEY}"]),
        "list": ([lorestore, "list", "global"], [*lk, "list", "--scope", "global"]),
        "search": (
            [lorestore, "search", "guard", "-s", "global", "-s", f"repo::{REPO}"],
            [*lk, "search", "guard"],
        ),
        # LoreKit's list is its "what applies here" (scopes from git), the nearest to recall.
        "recall": ([lorestore, "recall", "--task", TASK], [*lk, "list"]),
        "mcp": ([lorestore, "mcp"], [*lk, "mcp"]),
        # The floor of any server built on the Python SDK: its import and handshake, no tools
        # of substance (benchmarks/bare_mcp_server.py).
        "mcp-sdk": ([str(VENV_BIN / "python"), str(HERE / "bare_mcp_server.py")], None),
        # The floors of any one-shot command: the interpreter, and the interpreter importing
        # the libraries every operation command is built on (DESIGN: pydantic models for the
        # catalog's arguments and results, Typer for the options, Rich for the output).
        "python": ([str(VENV_BIN / "python"), "-c", "pass"], None),
        "cli-stack": ([str(VENV_BIN / "python"), "-c", STACK], None),
    }


def environment(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LORESTORE_", "LOREKIT_"))}
    return env | {
        "LORESTORE_HOME": str(tmp / "lorestore"),
        "LOREKIT_MODE": "local",
        "LOREKIT_HOME": str(tmp / "lorekit"),
        "LOREKIT_TELEMETRY": "0",
    }


def prepare(tmp: Path, env: dict[str, str], lorestore: str, node: str) -> Path:
    """A git checkout (origin github.com/acme/widget, one commit) to run in, and the lessons
    written by LoreKit's CLI, then imported into lorestore's embedded store."""
    repo = tmp / "widget"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.org"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "remote", "add", "origin", f"https://github.com/{REPO}.git"], check=True)
    (repo / "README.md").write_text("widget\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "start"], check=True)
    for scope, key, value in LESSONS:
        run = [node, str(LOREKIT), "write", "--scope", scope, "--key", key, value]
        subprocess.run(run, cwd=repo, env=env, check=True, capture_output=True)
    imported = [lorestore, "import", "--format", "lorekit", env["LOREKIT_HOME"], "--json"]
    subprocess.run(imported, cwd=repo, env=env, check=True, capture_output=True)
    return repo


def _message(proc: subprocess.Popen[bytes], want: int) -> dict[str, Any]:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the server closed stdout before answering request {want}")
        message = json.loads(line)
        if message.get("id") == want:
            return dict(message)


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    proc.stdin.flush()


def mcp_ready(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, int, str]:
    """Spawn a stdio server, do what a host does first (``initialize``, ``initialized``,
    ``tools/list``); nanoseconds to the handshake's answer and to the tool list, and stderr."""
    t0 = time.perf_counter_ns()
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {},
                 "clientInfo": {"name": "startup-bench", "version": "1"}}  # fmt: skip
        _send(proc, {"id": 1, "method": "initialize", "params": hello})
        _message(proc, 1)
        t1 = time.perf_counter_ns()
        _send(proc, {"method": "notifications/initialized"})
        _send(proc, {"id": 2, "method": "tools/list", "params": {}})
        listed = _message(proc, 2)
        t2 = time.perf_counter_ns()
        if not listed.get("result", {}).get("tools"):
            raise RuntimeError(f"{argv}: tools/list listed no tool: {listed}")
        _, err = proc.communicate(timeout=30)  # closes stdin: the host went away
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return t1 - t0, t2 - t0, err.decode(errors="replace")


def command_ns(argv: list[str], cwd: Path, env: dict[str, str]) -> int:
    if argv[-1] in ("mcp", str(HERE / "bare_mcp_server.py")):
        return mcp_ready(argv, cwd, env)[1]
    t0 = time.perf_counter_ns()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter_ns() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed


def pct(values: list[float], q: float) -> float:
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo, hi = int(pos), min(int(pos) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def calibrate() -> float:
    out = subprocess.run([sys.executable, "-c", CALIBRATION], capture_output=True, text=True)
    return float(out.stdout)


def measure(
    commands: dict[str, tuple[list[str], list[str] | None]], runs: int, warmup: int,
    cwd: Path, env: dict[str, str],
) -> dict[str, list[float]]:  # fmt: skip
    """Every subject once per round, in an order that rotates by one each round; the warm-up
    rounds (page cache, .pyc files) are not kept. Milliseconds."""
    order = [(name, who) for name, pair in commands.items() for who in (0, 1) if pair[who]]
    samples: dict[str, list[float]] = defaultdict(list)
    for i in range(warmup + runs):
        k = i % len(order)
        for name, who in order[k:] + order[:k]:
            argv = commands[name][who]
            assert argv is not None
            ms = command_ns(argv, cwd, env) / 1e6
            if i >= warmup:
                samples[f"{name}|{('lorestore', 'lorekit')[who]}"].append(ms)
        print(f"round {i + 1}/{warmup + runs}", file=sys.stderr, end="\r", flush=True)
    print(file=sys.stderr)
    return dict(samples)


def summary(samples: dict[str, list[float]], names: list[str]) -> list[dict[str, Any]]:
    rows = []
    for name in names:
        ours, theirs = samples[f"{name}|lorestore"], samples.get(f"{name}|lorekit")
        row: dict[str, Any] = {
            "command": name,
            "lorestore_median_ms": statistics.median(ours), "lorestore_p90_ms": pct(ours, 90),
            "lorestore_min_ms": min(ours),
        }  # fmt: skip
        if theirs:
            row |= {
                "lorekit_median_ms": statistics.median(theirs), "lorekit_p90_ms": pct(theirs, 90),
                "lorekit_min_ms": min(theirs),
                "ratio_of_medians": statistics.median(ours) / statistics.median(theirs),
                "median_round_ratio": statistics.median(
                    a / b for a, b in zip(ours, theirs, strict=True)),
            }  # fmt: skip
        rows.append(row)
    return rows


_IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def import_breakdown(stderr_text: str, top: int) -> dict[str, Any]:
    """Self time summed by package (``lorestore`` by sub-module), and the modules with the
    largest cumulative time, from ``-X importtime`` output."""
    by_package: dict[str, int] = defaultdict(int)
    cumulative: list[tuple[int, str]] = []
    for m in _IMPORT_LINE.finditer(stderr_text):
        self_us, cum_us, name = int(m[1]), int(m[2]), m[4]
        parts = name.split(".")
        by_package[".".join(parts[:2]) if parts[0] == "lorestore" else parts[0]] += self_us
        cumulative.append((cum_us, name))
    packages = sorted(by_package.items(), key=lambda kv: -kv[1])[:top]
    return {
        "total_ms": sum(by_package.values()) / 1000,
        "by_package_ms": {k: v / 1000 for k, v in packages},
        "top_cumulative_ms": {n: c / 1000 for c, n in sorted(cumulative, reverse=True)[:top]},
    }


def importtimes(
    commands: dict[str, tuple[list[str], list[str] | None]], cwd: Path, env: dict[str, str],
    top: int,
) -> dict[str, Any]:  # fmt: skip
    out = {}
    for name, (argv, _) in commands.items():
        if name in ("--version", "mcp-sdk", "python", "cli-stack"):
            continue
        traced = [str(VENV_BIN / "python"), "-X", "importtime", *argv]
        if name == "mcp":
            err = mcp_ready(traced, cwd, env)[2]
        else:
            err = subprocess.run(traced, cwd=cwd, env=env, capture_output=True, text=True).stderr
        out[name] = import_breakdown(err, top)
    return out


def render(result: dict[str, Any]) -> None:
    cal = result["calibration_us"]
    print(f"start-up, {result['runs']} interleaved rounds after {result['warmup']}; "
          f"calibration {cal[0]:.1f} µs before, {cal[1]:.1f} µs after; "
          f"load {result['loadavg_start'][0]:.1f} -> {result['loadavg_end'][0]:.1f}")  # fmt: skip
    head = f"{'command':10} {'lorestore p50':>13} {'p90':>7} {'LoreKit p50':>12} {'p90':>7}"
    print(head + f" {'ratio':>6} {'per-round':>9}")
    for r in result["summary"]:
        line = f"{r['command']:10} {r['lorestore_median_ms']:10.0f} ms {r['lorestore_p90_ms']:7.0f}"
        if "lorekit_median_ms" in r:
            line += f" {r['lorekit_median_ms']:9.0f} ms {r['lorekit_p90_ms']:7.0f}"
            line += f" {r['ratio_of_medians']:6.2f} {r['median_round_ratio']:9.2f}"
        print(line)
    for name, breakdown in result.get("importtime", {}).items():
        top = ", ".join(f"{k} {v:.0f}" for k, v in list(breakdown["by_package_ms"].items())[:8])
        print(f"imports of {name}: {breakdown['total_ms']:.0f} ms ({top})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20, help="measured rounds (20)")
    p.add_argument("--warmup", type=int, default=2, help="untimed rounds first (2)")
    p.add_argument("--only", help="comma-separated commands (default: all)")
    p.add_argument("--importtime", action="store_true", help="add -X importtime breakdowns")
    p.add_argument("--top", type=int, default=12, help="rows of each import breakdown (12)")
    p.add_argument("--json", type=Path, help="write every sample and the summary here")
    p.add_argument(
        "--lorestore",
        default=str(VENV_BIN / "lorestore"),
        help="the lorestore script to run (default: this checkout's .venv/bin/lorestore; with "
        "PYTHONPATH, another revision's source can be measured the same way)",
    )
    args = p.parse_args(argv)
    node = shutil.which("node")
    if node is None or not LOREKIT.exists():
        p.error(f"needs node on PATH and LoreKit's CLI at {LOREKIT}")
    lorestore = args.lorestore
    commands = subjects(lorestore, node)
    if args.only:
        commands = {k: v for k, v in commands.items() if k in args.only.split(",")}
    with tempfile.TemporaryDirectory(prefix="lorestore-startup-") as tmp:
        env = environment(Path(tmp))
        cwd = prepare(Path(tmp), env, lorestore, node)
        result: dict[str, Any] = {"runs": args.runs, "warmup": args.warmup,
                                  "command": " ".join(sys.argv), "machine": machine(),
                                  "loadavg_start": os.getloadavg()}  # fmt: skip
        before = calibrate()
        samples = measure(commands, args.runs, args.warmup, cwd, env)
        result["calibration_us"] = [before, calibrate()]
        result["loadavg_end"] = os.getloadavg()
        result["summary"] = summary(samples, list(commands))
        result["samples_ms"] = {k: [round(x, 2) for x in v] for k, v in samples.items()}
        if args.importtime:
            result["importtime"] = importtimes(commands, cwd, env, args.top)
    render(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
