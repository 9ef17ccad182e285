"""What issue 21's projects and an agent's search cost, in-process on SQLite, side by side in
one run (interleaved call by call, so a busy machine slows every subject alike):

- recall with the project named in the context (as before) against recall with the project
  derived from the repository (one declaration per repository; one more indexed read);
- search over the context's ladder as a person (no eligibility) against the same search as
  an agent (recall's rules: policies, the narrower lessons of each hit's key, eligibility).

Prints p50/p95 per subject, the ratios of the medians and the calibration figure (µs per
``sum(range(1000))``) before and after. Run: .venv/bin/python benchmarks/projects_bench.py
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import timeit
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from common import interleaved  # noqa: E402
from corpus import Corpus  # noqa: E402
from lorestore.auth.actor import local_actor, local_agent  # noqa: E402
from lorestore.models import (  # noqa: E402
    ProjectAddParams,
    RecallParams,
    SearchParams,
)
from lorestore.service import LessonService  # noqa: E402
from lorestore.storage.sqlite import SQLiteStore  # noqa: E402
from recall_bench import _cached  # noqa: E402

PERSON = local_actor(session="bench")
AGENT = local_agent(session="bench-agent")
REPOS = 5


def calibration() -> float:
    """µs per sum(range(1000)): the figure every benchmark page of this project quotes."""
    return min(timeit.repeat("sum(range(1000))", number=2000, repeat=20)) / 2000 * 1e6


def _pct(values: list[int], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] / 1e6


def measure(size: int, samples: int, warmup: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "projects.db"
        shutil.copyfile(_cached(size), target)
        store = SQLiteStore(target)
        service = LessonService(store, rate_limit=None)
        for i in range(REPOS):  # the corpus's repo i belongs to its project p<i>
            params = ProjectAddParams(name=f"p{i}", repos=[f"acme/svc{i}"])
            service.project_add(PERSON, params)
        tasks = list(Corpus(seed=11).queries(samples + warmup))
        named, derived, person, agent = [], [], [], []
        for n, task in enumerate(tasks):
            where = {"repo": f"acme/svc{n % REPOS}", "branch": f"feat-{n % 3}"}
            named.append(RecallParams(**where, project=f"p{n % REPOS}", task=task))
            derived.append(RecallParams(**where, task=task))
            person.append(SearchParams(query=task, **where, limit=10))
            agent.append(SearchParams(query=task, **where, limit=10))
        before = calibration()
        times = interleaved(
            {
                "recall, project named": (lambda p: service.memory_recall(PERSON, p), named),
                "recall, project derived": (lambda p: service.memory_recall(PERSON, p), derived),
                "search, person": (lambda p: service.memory_search(PERSON, p), person),
                "search, agent": (lambda p: service.memory_search(AGENT, p), agent),
            },
            warmup,
            lambda: None,
        )
        after = calibration()
        store.close()
    figures = {
        name: {"p50_ms": round(_pct(t, 50), 3), "p95_ms": round(_pct(t, 95), 3)}
        for name, t in times.items()
    }
    med = {name: statistics.median(t) for name, t in times.items()}
    return {
        "lessons": size,
        "samples": samples,
        "figures": figures,
        "ratio_derived_to_named": round(
            med["recall, project derived"] / med["recall, project named"], 3
        ),
        "ratio_agent_to_person": round(med["search, agent"] / med["search, person"], 3),
        "calibration_us": [round(before, 2), round(after, 2)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()
    results = [measure(int(s), args.samples, args.warmup) for s in args.sizes.split(",")]
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
