"""LoreKit's own CLI, unmodified, against lorestore's LoreKit mount and against its own local
store, on the same 10k lessons: ``lorekit list`` and ``lorekit search WORD`` as a cold process
each (what a person at a terminal waits for), both subjects in every round in alternating
order. p50 and p95 wall time, the ratio of the medians and the calibration figure
(``sum(range(1000))``, in µs) before and after.

The lessons: lorestore's service writes them into the embedded store that ``lorestore serve``
then serves, and ``lorestore export --format lorekit`` writes the same lessons as LoreKit's
tree (``hook_bench.prepare``); a tenth are for the checkout's repository (acme/widget), a tenth
global, the rest spread over 40 other repositories. Remote: ``LOREKIT_ENDPOINT`` at the mount,
an ``lk_rw_`` token and an empty local tree. Local: the tree, no endpoint.

    .venv/bin/python benchmarks/lorekit_bench.py [--lessons 10000] [--runs 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, VENV_BIN, machine
from hook_bench import prepare, run_once
from startup_bench import calibrate, environment, pct

# LoreKit's CLI in shared/peers beside the checkout or beside a folder above it (a worktree).
LOREKIT = next(
    (
        found
        for folder in ROOT.parents
        if (found := folder / "shared" / "peers" / "lorekit-cli" / "bin" / "lorekit.mjs").exists()
    ),
    ROOT.parent / "shared" / "peers" / "lorekit-cli" / "bin" / "lorekit.mjs",
)
WORD = "schema"  # in a quarter of the lessons' text


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def serve(env: dict[str, str], lorestore: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    server_env = env | {"LORESTORE_MAINTENANCE_HOURS": "off", "LORESTORE_RATE_LIMIT": "1000000"}
    argv = [lorestore, "serve", "--port", str(port), "--no-admin-token", "--log-format", "json"]
    proc = subprocess.Popen(
        argv, env=server_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("lorestore serve did not start")


def lorekit_token(env: dict[str, str], lorestore: str) -> str:
    argv = [lorestore, "token", "create", "--name", "bench", "--lorekit", "--json"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    token: str = json.loads(done.stdout)["token"]
    return token


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lessons", type=int, default=10_000)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--json", type=Path)
    p.add_argument("--lorestore", default=str(VENV_BIN / "lorestore"))
    args = p.parse_args(argv)
    node = shutil.which("node")
    if node is None or not LOREKIT.exists():
        p.error(f"needs node on PATH and LoreKit's CLI at {LOREKIT}")
    with tempfile.TemporaryDirectory(prefix="lorestore-lorekit-") as tmp:
        env = environment(Path(tmp))
        cwd = prepare(Path(tmp), env, args.lorestore, args.lessons)
        server, url = serve(env, args.lorestore)
        try:
            empty_tree = Path(tmp) / "empty-lorekit"
            empty_tree.mkdir()
            local = env | {"LOREKIT_MODE": "local"}
            remote = {k: v for k, v in env.items() if k != "LOREKIT_MODE"} | {
                "LOREKIT_HOME": str(empty_tree),
                "LOREKIT_ENDPOINT": f"{url}/lorekit/functions/v1/mcp",
                "LOREKIT_TOKEN": lorekit_token(env, args.lorestore),
            }
            result = rounds(args, [node, str(LOREKIT)], cwd, {"lorestore": remote, "local": local})
        finally:
            server.terminate()
            server.wait(timeout=60)
    report(result, args)
    return 0


def rounds(
    args: argparse.Namespace, lk: list[str], cwd: Path, envs: dict[str, dict[str, str]]
) -> dict[str, Any]:
    commands = {"list": [*lk, "list"], "search": [*lk, "search", WORD]}
    samples: dict[str, list[float]] = {f"{c}/{s}": [] for c in commands for s in envs}
    outputs: dict[str, str] = {}
    result: dict[str, Any] = {"lessons": args.lessons, "runs": args.runs, "warmup": args.warmup,
                              "command": " ".join(sys.argv), "machine": machine(),
                              "loadavg_start": os.getloadavg()}  # fmt: skip
    before = calibrate()
    order = list(envs)
    for i in range(args.warmup + args.runs):
        for command, argv in commands.items():
            for subject in order if i % 2 == 0 else order[::-1]:
                ms, _cpu, out = run_once(argv, b"", cwd, envs[subject])
                outputs[f"{command}/{subject}"] = out
                if i >= args.warmup:
                    samples[f"{command}/{subject}"].append(ms)
        print(f"round {i + 1}/{args.warmup + args.runs}", file=sys.stderr, end="\r")
    print(file=sys.stderr)
    result["calibration_us"] = [before, calibrate()]
    result["loadavg_end"] = os.getloadavg()
    result["summary"] = {
        name: {"p50_ms": statistics.median(v), "p95_ms": pct(v, 95), "min_ms": min(v)}
        for name, v in samples.items()
    }
    result["ratio_of_medians"] = {
        c: statistics.median(samples[f"{c}/lorestore"]) / statistics.median(samples[f"{c}/local"])
        for c in commands
    }
    result["output_lines"] = {name: out.count("\n") for name, out in outputs.items()}
    result["samples_ms"] = {k: [round(x, 2) for x in v] for k, v in samples.items()}
    return result


def report(result: dict[str, Any], args: argparse.Namespace) -> None:
    cal = result["calibration_us"]
    print(f"lorekit list / search, {args.lessons} lessons, {args.runs} rounds after "
          f"{args.warmup}; calibration {cal[0]:.1f} µs before, {cal[1]:.1f} µs after; load "
          f"{result['loadavg_start'][0]:.1f} -> {result['loadavg_end'][0]:.1f}")  # fmt: skip
    for name, row in result["summary"].items():
        lines = result["output_lines"][name]
        print(f"  {name:18} p50 {row['p50_ms']:6.0f} ms  p95 {row['p95_ms']:6.0f} ms  "
              f"min {row['min_ms']:5.0f} ms  output {lines} lines")  # fmt: skip
    for command, ratio in result["ratio_of_medians"].items():
        print(f"  {command}: lorestore's mount ÷ LoreKit's local store, medians {ratio:.2f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    sys.exit(main())
