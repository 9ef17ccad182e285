"""Scoring the retrieval eval: recall@5, MRR, nDCG@10 and the forbidden-hit rate, overall and
per query category, for each backend and handler; rendered as JSON and as a Rich table."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from lorestore.evaluation.cases import Handler
from lorestore.evaluation.runner import Outcome

RECALL_K = 5
NDCG_K = 10


def recall_at(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """The share of the relevant lessons found in the first ``k`` results."""
    wanted = set(relevant)
    return len(wanted & set(ranked[:k])) / len(wanted)


def reciprocal_rank(ranked: Sequence[str], relevant: Sequence[str]) -> float:
    """1 / the rank of the first relevant result; 0 when none came back."""
    wanted = set(relevant)
    for rank, ref in enumerate(ranked, start=1):
        if ref in wanted:
            return 1.0 / rank
    return 0.0


def ndcg_at(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """Normalised discounted cumulative gain with binary relevance over the first ``k``."""
    wanted = set(relevant)
    gain = sum(1 / math.log2(i + 2) for i, ref in enumerate(ranked[:k]) if ref in wanted)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(wanted), k)))
    return gain / ideal


@dataclass(frozen=True, slots=True)
class Score:
    """Figures over a group of queries. Ranking figures average over the queries that expect
    something; the forbidden-hit rate counts every query."""

    queries: int
    ranked_queries: int
    recall_at_5: float | None
    mrr: float | None
    ndcg_at_10: float | None
    forbidden_queries: int
    forbidden_hits: int

    @property
    def forbidden_rate(self) -> float:
        return self.forbidden_queries / self.queries if self.queries else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "queries": self.queries,
            "ranked_queries": self.ranked_queries,
            "recall_at_5": _round(self.recall_at_5),
            "mrr": _round(self.mrr),
            "ndcg_at_10": _round(self.ndcg_at_10),
            "forbidden_hit_rate": round(self.forbidden_rate, 3),
            "forbidden_queries": self.forbidden_queries,
            "forbidden_hits": self.forbidden_hits,
        }


def _round(value: float | None) -> float | None:
    """Three places, as the table shows them: 1/139 queries is 0.007."""
    return None if value is None else round(value, 3)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def score(outcomes: Sequence[Outcome]) -> Score:
    ranked = [o for o in outcomes if o.query.relevant(o.handler)]
    return Score(
        queries=len(outcomes),
        ranked_queries=len(ranked),
        recall_at_5=_mean(
            [recall_at(o.ranked, o.query.relevant(o.handler), RECALL_K) for o in ranked]
        ),
        mrr=_mean([reciprocal_rank(o.ranked, o.query.relevant(o.handler)) for o in ranked]),
        ndcg_at_10=_mean([ndcg_at(o.ranked, o.query.relevant(o.handler), NDCG_K) for o in ranked]),
        forbidden_queries=sum(1 for o in outcomes if o.forbidden_hits),
        forbidden_hits=sum(len(o.forbidden_hits) for o in outcomes),
    )


@dataclass(frozen=True, slots=True)
class Run:
    """The outcomes of one handler on one backend."""

    backend: str
    handler: Handler
    outcomes: tuple[Outcome, ...]

    def overall(self) -> Score:
        return score(self.outcomes)

    def by_category(self) -> dict[str, Score]:
        categories = sorted({o.query.category for o in self.outcomes})
        return {c: score([o for o in self.outcomes if o.query.category == c]) for c in categories}


def split_runs(backend: str, outcomes: Sequence[Outcome]) -> list[Run]:
    handlers: list[Handler] = ["search", "recall"]
    return [Run(backend, h, tuple(o for o in outcomes if o.handler == h)) for h in handlers]


def outcome_dict(o: Outcome) -> dict[str, Any]:
    relevant = o.query.relevant(o.handler)
    first = reciprocal_rank(o.ranked, relevant)
    return {
        "id": o.query.id,
        "category": o.query.category,
        "served": list(o.ranked[:NDCG_K]),
        "served_count": len(o.ranked),
        "expected": relevant,
        "missed_at_5": [r for r in relevant if r not in o.ranked[:RECALL_K]],
        "first_relevant_rank": round(1 / first) if first else None,
        "forbidden_hits": list(o.forbidden_hits),
    }


def report(runs: Sequence[Run], dataset: dict[str, Any]) -> dict[str, Any]:
    """The whole eval as one JSON-ready document."""
    return {
        "dataset": dataset,
        "ok": forbidden_total(runs) == 0,
        "runs": [
            {
                "backend": run.backend,
                "handler": run.handler,
                "overall": run.overall().to_dict(),
                "categories": {c: s.to_dict() for c, s in run.by_category().items()},
                "queries": [outcome_dict(o) for o in run.outcomes],
            }
            for run in runs
        ],
    }


def forbidden_total(runs: Sequence[Run]) -> int:
    return sum(run.overall().forbidden_hits for run in runs)


def shortfalls(
    runs: Sequence[Run], *, min_recall: float | None, min_mrr: float | None
) -> list[str]:
    """Each run whose overall figures fall below the given floors, said in words."""
    found = []
    for run in runs:
        overall = run.overall()
        name = f"{run.backend}/{run.handler}"
        if min_recall is not None and (overall.recall_at_5 or 0.0) < min_recall:
            found.append(f"{name}: recall@5 {overall.recall_at_5:.3f} < {min_recall}")
        if min_mrr is not None and (overall.mrr or 0.0) < min_mrr:
            found.append(f"{name}: MRR {overall.mrr:.3f} < {min_mrr}")
    return found


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _row(table: Table, category: str, s: Score, *, bold: bool) -> None:
    forbidden = f"{s.forbidden_queries}/{s.queries}"
    table.add_row(
        category,
        f"{s.ranked_queries}/{s.queries}",
        _fmt(s.recall_at_5),
        _fmt(s.mrr),
        _fmt(s.ndcg_at_10),
        f"[red]{forbidden}[/]" if s.forbidden_queries else forbidden,
        style="bold" if bold else None,
    )


def render(console: Console, runs: Sequence[Run], *, show_misses: bool = False) -> None:
    """One table per backend and handler: a row per category, then the overall figures.
    "ranked" counts the queries that expect a lesson; "forbidden" those that got a
    forbidden one."""
    for run in runs:
        table = Table(title=f"{run.backend} · memory_{run.handler}", title_justify="left")
        table.add_column("category")
        for name in ("ranked", "recall@5", "MRR", "nDCG@10", "forbidden"):
            table.add_column(name, justify="right")
        for category, s in run.by_category().items():
            _row(table, category, s, bold=False)
        table.add_section()
        _row(table, "overall", run.overall(), bold=True)
        console.print(table)
    if show_misses:
        _render_misses(console, runs)


def _render_misses(console: Console, runs: Sequence[Run]) -> None:
    table = Table(title="queries below rank 1 or with forbidden hits")
    for name in ("backend", "handler", "query", "rank", "forbidden", "served (top 3)"):
        table.add_column(name)
    for run in runs:
        for o in run.outcomes:
            d = outcome_dict(o)
            if d["first_relevant_rank"] == 1 and not o.forbidden_hits:
                continue
            if not d["expected"] and not o.forbidden_hits:
                continue
            rank = d["first_relevant_rank"]
            table.add_row(
                run.backend,
                run.handler,
                o.query.id,
                "-" if rank is None else str(rank),
                ", ".join(o.forbidden_hits),
                ", ".join(o.ranked[:3]),
            )
    console.print(table)
