"""Shared pieces of the benchmark suite: the workload drawn from the corpus, timing loops,
percentiles, the machine description and where cached databases live."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import os
import platform
import random
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from corpus import Corpus

SEED = 7
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
CACHE = RESULTS / "cache"
VENV_BIN = ROOT / ".venv" / "bin"
OPS = ("memory_write", "memory_read", "memory_list", "memory_search")
LIST_SCOPE = "project::p0"  # the corpus's busiest scope (about half of all lessons)
SEARCH_SCOPES = ["global", "project::p0", "repo::acme/svc0"]
stderr = Console(stderr=True)


@dataclass
class Stats:
    """Latency samples of one operation on one subject at one corpus size."""

    section: str
    subject: str
    op: str
    size: int
    samples_ns: list[int]
    extra: dict[str, Any] = field(default_factory=dict)

    def pct(self, q: float) -> float:
        """The q-th percentile in milliseconds (linear interpolation between ranks)."""
        xs = sorted(self.samples_ns)
        if not xs:
            return float("nan")
        pos = (len(xs) - 1) * q / 100
        lo = int(pos)
        hi = min(lo + 1, len(xs) - 1)
        return (xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)) / 1e6

    @property
    def p50(self) -> float:
        return self.pct(50)

    @property
    def p95(self) -> float:
        return self.pct(95)

    @property
    def p99(self) -> float:
        return self.pct(99)

    def to_json(self) -> dict[str, Any]:
        mean = sum(self.samples_ns) / max(len(self.samples_ns), 1) / 1e6
        return {
            "section": self.section, "subject": self.subject, "op": self.op, "size": self.size,
            "n": len(self.samples_ns), "p50_ms": self.p50, "p95_ms": self.p95,
            "p99_ms": self.p99, "mean_ms": mean,
            "extra": self.extra, "samples_us": [round(s / 1e3, 1) for s in self.samples_ns],
        }  # fmt: skip


class Workload:
    """The corpus at one size, and the calls (tool arguments) each operation is timed with.

    Every subject (the SQLite floor, the service, the MCP servers) gets the same arguments in
    the same order, so their figures describe the same work.
    """

    def __init__(self, size: int, ops: int, warmup: int) -> None:
        self.size, self.ops, self.warmup = size, ops, warmup
        per_batch = ops + warmup
        self.batches = 2  # distinct new lessons for each writer sharing one database copy
        gen = Corpus(seed=SEED).lessons(size + per_batch * self.batches)
        rows = list(gen)
        self.lessons = rows[:size]
        self._new = rows[size:]
        pick = random.Random(SEED + size)
        self._reads = [self.lessons[pick.randrange(size)] for _ in range(per_batch)]
        self._queries = list(Corpus(seed=SEED).queries(per_batch))
        self.scope_counts: dict[str, int] = {}
        for scope, *_ in self.lessons:
            self.scope_counts[scope] = self.scope_counts.get(scope, 0) + 1

    def calls(self, op: str, batch: int = 0) -> list[dict[str, Any]]:
        """Warm-up calls followed by measured calls for ``op`` (``batch`` picks new lessons)."""
        n = self.ops + self.warmup
        if op == "memory_write":
            rows = self._new[batch * n : (batch + 1) * n]
            return [{"scope": s, "key": k, "value": v, "tags": t} for s, k, v, t in rows]
        if op == "memory_read":
            return [{"scope": s, "key": k} for s, k, _, _ in self._reads]
        if op == "memory_list":
            return [{"scope": LIST_SCOPE, "limit": 50} for _ in range(n)]
        if op == "memory_search":
            return [{"query": q, "scopes": SEARCH_SCOPES, "limit": 10} for q in self._queries]
        raise ValueError(op)


Subjects = dict[str, tuple[Callable[[Any], Any], list[Any]]]


def _order(names: list[str], i: int) -> list[str]:
    k = i % len(names)
    return names[k:] + names[:k]


def interleaved(
    subjects: Subjects, warmup: int, on_round: Callable[[], None]
) -> dict[str, list[int]]:
    """Time several subjects on the same work, alternating between them call by call in a
    rotating order, so that whatever else the machine does meanwhile hits them alike. Each
    subject's calls are its warm-up calls (untimed) followed by its measured calls."""
    names = list(subjects)
    rounds = min(len(calls) for _, calls in subjects.values())
    for i in range(warmup):
        for name in _order(names, i):
            fn, calls = subjects[name]
            fn(calls[i])
    gc.collect()
    samples: dict[str, list[int]] = {name: [] for name in names}
    clock = time.perf_counter_ns
    for i in range(warmup, rounds):
        for name in _order(names, i):
            fn, calls = subjects[name]
            t0 = clock()
            fn(calls[i])
            samples[name].append(clock() - t0)
        on_round()
    return samples


async def interleaved_async(
    subjects: Subjects, warmup: int, on_round: Callable[[], None]
) -> dict[str, list[int]]:
    """The asynchronous twin of interleaved, for calls over MCP (``fn`` returns awaitables)."""
    names = list(subjects)
    rounds = min(len(calls) for _, calls in subjects.values())
    for i in range(warmup):
        for name in _order(names, i):
            fn, calls = subjects[name]
            await fn(calls[i])
    gc.collect()
    samples: dict[str, list[int]] = {name: [] for name in names}
    clock = time.perf_counter_ns
    for i in range(warmup, rounds):
        for name in _order(names, i):
            fn, calls = subjects[name]
            t0 = clock()
            await fn(calls[i])
            samples[name].append(clock() - t0)
        on_round()
        await asyncio.sleep(0)
    return samples


def fts_match(query: str) -> str:
    """The FTS5 expression lorestore builds for a query: any of its words, each quoted."""
    words = dict.fromkeys(re.findall(r"\w+", query.lower()))
    return " OR ".join(f'"{w}"' for w in words)


def schema_tag() -> str:
    """A short digest of lorestore's migrations, so a schema change invalidates cached files."""
    mig = lorestore_dir() / "storage" / "sqlite" / "migrations"
    digest = hashlib.sha256()
    for path in sorted(mig.glob("*.sql")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:10]


def lorestore_dir() -> Path:
    """Where the lorestore being measured is imported from (PYTHONPATH may point elsewhere)."""
    import lorestore

    return Path(lorestore.__file__).resolve().parent


def server_env() -> dict[str, str]:
    """Environment for spawned servers: the SDK passes only a safe subset of ours, so forward
    PYTHONPATH explicitly, and the servers import the same lorestore as this process."""
    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}


def _git_head() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True, timeout=10)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def machine() -> dict[str, Any]:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    with suppress(ValueError, OSError, AttributeError):
        mem_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    return {
        "cpu_count": os.cpu_count(), "cpu_model": model, "memory_gb": mem_gb,
        "platform": platform.platform(), "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version, "mcp_sdk": version("mcp"),
        "pydantic": version("pydantic"), "lorestore": version("lorestore"),
        "lorestore_from": str(lorestore_dir()), "git_head": _git_head(),
    }  # fmt: skip


def progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), TimeRemainingColumn(), console=stderr, transient=False,
    )  # fmt: skip


@contextmanager
def step(prog: Progress, label: str, total: int) -> Iterator[Callable[[], None]]:
    """A progress task; yields a function that advances it by one, and logs when it is done."""
    task = prog.add_task(label, total=total)
    t0 = time.perf_counter()
    try:
        yield lambda: prog.advance(task)
    finally:
        prog.remove_task(task)
        prog.console.log(f"{label}: {time.perf_counter() - t0:.1f} s")
