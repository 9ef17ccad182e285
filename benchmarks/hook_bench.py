"""The session-start hook as a host runs it: a cold process per event, the host's JSON on
stdin, on the embedded store with 10k lessons, side by side in one run with LoreKit's own
hook in local mode on the same lessons (``lorekit hook --adapter claude --event
SessionStart``; left out, with a note, where node or LoreKit's CLI is missing), each round
running every subject in alternating order. p50 and p95 wall time, the ratio of the medians
and the calibration figure (``sum(range(1000))``, in µs) before and after. ``--importtime``
adds where lorestore's hook spends its imports.

The lessons: lorestore's service writes them (so both stores hold the same text), then
``lorestore export --format lorekit`` writes LoreKit's tree; a tenth are for the checkout's
repository (acme/widget), a tenth global, the rest spread over 40 other repositories.

``--also NAME=SRC`` (repeatable) adds the hook of another revision's sources, such as the base
of a change (``git archive main | tar -x -C /tmp/base``, then ``--also base=/tmp/base/src``):
the same entry point run with ``PYTHONPATH=SRC`` (which comes before the editable install), its
byte code compiled as this checkout's is, in the same alternating rounds, on the same store.
A machine whose speed drifts by a third within minutes compares revisions only that way.

    .venv/bin/python benchmarks/hook_bench.py [--lessons 10000] [--runs 30] [--json out.json]
        [--also base=/tmp/base/src] [--importtime]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import VENV_BIN, machine
from startup_bench import LOREKIT, calibrate, environment, import_breakdown, pct

REPO = "acme/widget"
WORDS = ("guard", "flag", "release", "cache", "schema", "deploy", "retry", "lint", "fixture",
         "timeout", "token", "branch", "build", "index", "queue", "worker")  # fmt: skip


def lessons(n: int) -> list[tuple[str, str, str]]:
    out = []
    for i in range(n):
        if i % 10 == 0:
            scope = f"repo::{REPO}"
        elif i % 10 == 1:
            scope = "global"
        else:
            scope = f"repo::acme/svc{i % 40}"
        w = [WORDS[(i * k) % len(WORDS)] for k in (1, 3, 5, 7)]
        value = (f"Lesson {i}: the {w[0]} step must run before the {w[1]} step; "
                 f"check the {w[2]} config when the {w[3]} fails (#{i}).")  # fmt: skip
        out.append((scope, f"lesson-{i:05d}", value))
    return out


def compiled(*sources: Path) -> None:
    """Byte-compile lorestore's modules (this checkout's and those of each ``--also`` source
    folder), as an installed package has them: with PYTHONDONTWRITEBYTECODE set (this
    machine's default) an editable checkout would otherwise compile every module from source
    at every start."""
    import compileall

    import lorestore

    for folder in (Path(lorestore.__file__).parent, *(src / "lorestore" for src in sources)):
        compileall.compile_dir(folder, quiet=1)


def also_sources(p: argparse.ArgumentParser, specs: list[str]) -> dict[str, Path]:
    """``NAME=SRC`` pairs: SRC the folder holding another revision's ``lorestore`` package."""
    found: dict[str, Path] = {}
    for spec in specs:
        name, sep, src = spec.partition("=")
        folder = Path(src).resolve()
        if not sep or not name or name in ("lorestore", "lorekit", *found):
            p.error(f"--also {spec!r}: give NAME=SRC with a new name")
        if not (folder / "lorestore" / "__init__.py").is_file():
            p.error(f"--also {spec!r}: {folder} holds no lorestore package")
        found[name] = folder
    return found


def prepare(tmp: Path, env: dict[str, str], lorestore: str, n: int) -> Path:
    repo = tmp / "widget"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.org"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "remote", "add", "origin", f"https://github.com/{REPO}.git"], check=True)
    (repo / "README.md").write_text("widget\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "start"], check=True)
    # The same lessons in both stores: written by lorestore's service, exported as LoreKit's tree.
    os.environ["LORESTORE_HOME"] = env["LORESTORE_HOME"]
    from lorestore.auth.actor import local_actor
    from lorestore.composition import build_service
    from lorestore.config import load_settings
    from lorestore.models import WriteParams

    service = build_service(load_settings(use_login=False))
    actor = local_actor(agent="bench")
    for scope, key, value in lessons(n):
        service.memory_write(actor, WriteParams(scope=scope, key=key, value=value))  # type: ignore[call-arg]
    service.store.close()
    exported = [lorestore, "export", "--format", "lorekit", "--no-history", env["LOREKIT_HOME"]]
    subprocess.run(exported, cwd=repo, env=env, check=True, capture_output=True)
    return repo


def session_start(host_json: dict[str, Any]) -> bytes:
    return json.dumps(host_json).encode()


def run_once(
    argv: list[str], stdin: bytes, cwd: Path, env: dict[str, str]
) -> tuple[float, float, str]:
    """Wall time and CPU time (user + system of the process and its children, such as git)
    in milliseconds, and stdout. CPU time is what a shared, loaded machine disturbs least."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter_ns()
    done = subprocess.run(argv, input=stdin, cwd=cwd, env=env, capture_output=True, check=False)
    ms = (time.perf_counter_ns() - t0) / 1e6
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return ms, cpu, done.stdout.decode(errors="replace")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lessons", type=int, default=10_000)
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--importtime", action="store_true")
    p.add_argument("--json", type=Path)
    p.add_argument("--lorestore", default=str(VENV_BIN / "lorestore"))
    p.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="NAME=SRC",
        help="also run the hook of the lorestore package in SRC (PYTHONPATH)",
    )
    args = p.parse_args(argv)
    also = also_sources(p, args.also)
    node = shutil.which("node")
    lorekit = node is not None and LOREKIT.exists()
    if not lorekit:
        print(f"LoreKit left out: needs node on PATH and its CLI at {LOREKIT}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="lorestore-hook-") as tmp:
        env = environment(Path(tmp))
        cwd = prepare(Path(tmp), env, args.lorestore, args.lessons)
        compiled(*also.values())
        payload = {"session_id": "bench", "transcript_path": str(Path(tmp) / "t.jsonl"),
                   "cwd": str(cwd), "permission_mode": "default",
                   "hook_event_name": "SessionStart", "source": "startup"}  # fmt: skip
        subjects = {
            "lorestore": [args.lorestore, "hook", "session-start", "--host", "claude-code"],
        }
        if lorekit:
            subjects["lorekit"] = [str(node), str(LOREKIT), "hook", "--adapter", "claude",
                                   "--event", "SessionStart"]  # fmt: skip
        envs = {name: env for name in subjects}
        for name, src in also.items():
            subjects[name] = subjects["lorestore"]
            envs[name] = env | {"PYTHONPATH": str(src)}
        outputs: dict[str, str] = {}
        samples: dict[str, list[float]] = {name: [] for name in subjects}
        cpu: dict[str, list[float]] = {name: [] for name in subjects}
        empty = dict.fromkeys(subjects, 0)  # measured runs that answered no context at all
        result: dict[str, Any] = {"lessons": args.lessons, "runs": args.runs,
                                  "warmup": args.warmup, "command": " ".join(sys.argv),
                                  "machine": machine(),
                                  "loadavg_start": os.getloadavg()}  # fmt: skip
        before = calibrate()
        order = list(subjects)
        run_id = uuid.uuid4().hex[:12]
        for i in range(args.warmup + args.runs):
            for name in order if i % 2 == 0 else order[::-1]:
                # A session id never used before: both hooks remember the sessions they served
                # (LoreKit outside LOREKIT_HOME, so across runs of this benchmark too) and
                # answer a known one at once, without reading a lesson.
                data = session_start({**payload, "session_id": f"bench-{run_id}-{i}-{name}"})
                ms, cpu_ms, out = run_once(subjects[name], data, cwd, envs[name])
                outputs[name] = out
                if i >= args.warmup:
                    samples[name].append(ms)
                    cpu[name].append(cpu_ms)
                    empty[name] += len(out.strip()) < 3  # "", "{}"
            print(f"round {i + 1}/{args.warmup + args.runs}", file=sys.stderr, end="\r")
        print(file=sys.stderr)
        result["calibration_us"] = [before, calibrate()]
        result["loadavg_end"] = os.getloadavg()
        result["summary"] = {
            name: {
                "p50_ms": statistics.median(v),
                "p95_ms": pct(v, 95),
                "min_ms": min(v),
                "cpu_p50_ms": statistics.median(cpu[name]),
                "cpu_p95_ms": pct(cpu[name], 95),
            }
            for name, v in samples.items()
        }
        ours = samples["lorestore"]
        if lorekit:
            theirs = samples["lorekit"]
            result["ratio_of_medians"] = statistics.median(ours) / statistics.median(theirs)
            result["median_round_ratio"] = statistics.median(
                a / b for a, b in zip(ours, theirs, strict=True)
            )
            result["cpu_ratio_of_medians"] = statistics.median(cpu["lorestore"]) / (
                statistics.median(cpu["lorekit"])
            )
        # Each other revision against this checkout: > 1 when this checkout is faster.
        result["also_ratio_of_medians"] = {
            name: statistics.median(samples[name]) / statistics.median(ours) for name in also
        }
        result["also_median_round_ratio"] = {
            name: statistics.median(a / b for a, b in zip(samples[name], ours, strict=True))
            for name in also
        }
        result["output_chars"] = {name: len(out) for name, out in outputs.items()}
        result["empty_answers"] = empty
        result["samples_ms"] = {k: [round(x, 2) for x in v] for k, v in samples.items()}
        result["cpu_samples_ms"] = {k: [round(x, 2) for x in v] for k, v in cpu.items()}
        if args.importtime:
            traced = [str(VENV_BIN / "python"), "-X", "importtime", *subjects["lorestore"]]
            done = subprocess.run(traced, input=session_start(payload), cwd=cwd, env=env,
                                  capture_output=True, text=False, check=False)  # fmt: skip
            result["importtime"] = import_breakdown(done.stderr.decode(), 12)
    cal = result["calibration_us"]
    print(f"session-start hook, {args.lessons} lessons, {args.runs} rounds after {args.warmup}; "
          f"calibration {cal[0]:.1f} µs before, {cal[1]:.1f} µs after; load "
          f"{result['loadavg_start'][0]:.1f} -> {result['loadavg_end'][0]:.1f}")  # fmt: skip
    for name, row in result["summary"].items():
        print(f"  {name:10} p50 {row['p50_ms']:6.0f} ms  p95 {row['p95_ms']:6.0f} ms  "
              f"min {row['min_ms']:5.0f} ms  cpu p50 {row['cpu_p50_ms']:5.0f} ms "
              f"p95 {row['cpu_p95_ms']:5.0f} ms  "
              f"output {result['output_chars'][name]} chars, "
              f"{result['empty_answers'][name]} empty")  # fmt: skip
    if lorekit:
        print(f"  lorestore / lorekit: ratio of medians {result['ratio_of_medians']:.2f}, "
              f"median per-round ratio {result['median_round_ratio']:.2f}, "
              f"CPU ratio of medians {result['cpu_ratio_of_medians']:.2f}")  # fmt: skip
    for name in also:
        print(f"  {name} / lorestore: ratio of medians "
              f"{result['also_ratio_of_medians'][name]:.2f}, median per-round ratio "
              f"{result['also_median_round_ratio'][name]:.2f}")  # fmt: skip
    if "importtime" in result:
        top = ", ".join(
            f"{k} {v:.0f}" for k, v in list(result["importtime"]["by_package_ms"].items())[:8]
        )
        print(f"  imports: {result['importtime']['total_ms']:.0f} ms ({top})")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
