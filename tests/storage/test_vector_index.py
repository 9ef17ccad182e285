"""The in-process vector index (semantic/index.py) against an exact search with the real
model: a rung larger than EXACT_UP_TO is narrowed by the vectors' first components before the
whole vectors rank it, and finds (nearly) what the exact product finds; a rung updated in
place and by appending keeps each lesson's row."""

from __future__ import annotations

import itertools
import random

import numpy as np

from lorestore.semantic.index import EXACT_UP_TO, VectorIndex, pack, unpack
from lorestore.semantic.model import Embedder, availability

WORDS = {
    "thing": ["database", "cache", "queue", "fixture", "migration", "build", "deploy", "token"],
    "verb": ["breaks", "needs", "slows", "blocks", "retries", "skips", "locks", "leaks"],
    "what": ["on CI", "in tests", "at night", "under load", "after upgrades", "on Fridays"],
    "who": ["the billing service", "the search index", "the auth proxy", "the mailer"],
}


def _texts(n: int) -> list[str]:
    rng = random.Random(7)
    combos = list(itertools.product(*WORDS.values()))
    rng.shuffle(combos)
    return [f"{t} {v} {w} for {o} (note {i})" for i, (t, v, w, o) in enumerate(combos[:n])]


def test_a_large_rung_finds_what_the_exact_search_finds() -> None:
    model = Embedder(availability().version or "")
    texts = _texts(EXACT_UP_TO + 1500)
    stored = unpack(pack(model.embed(texts)))  # as the index reads them: int8 and back
    index = VectorIndex()
    rung = ("user:local", "global")
    index.update(rung, zip([f"id{i}" for i in range(len(texts))], pack(stored), strict=True), 1)
    queries = model.embed(["postgres database locks", "flaky fixture in tests", "deploy on Friday"])
    overlap = []
    for query in queries:
        exact = {f"id{i}" for i in np.argsort(-(stored @ query))[:10]}
        found = index.nearest([rung], query, 10)
        overlap.append(len(exact & set(found)) / 10)
        assert all(-1.0 <= sim <= 1.0001 for sim in found.values())
    assert min(overlap) >= 0.8, overlap


def test_an_update_replaces_a_row_and_an_append_adds_one() -> None:
    model = Embedder(availability().version or "")
    a, b, c = pack(model.embed(["postgres runs locally", "ruff formats code", "csv for excel"]))
    query = model.embed(["csv spreadsheet"])[0]
    index = VectorIndex()
    rung = ("user:local", "global")
    index.update(rung, [("x", a), ("y", b)], 5)
    assert index.since(rung) == 5
    assert "x" in index.nearest([rung], model.embed(["postgres"])[0], 1)
    index.update(rung, [("x", c)], 6)  # x's new version
    assert list(index.nearest([rung], query, 1)) == ["x"]
    index.update(rung, [("z", a)], 7)
    assert set(index.nearest([rung], query, 3)) == {"x", "y", "z"}
    assert index.since(rung) == 7
