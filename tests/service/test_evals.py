"""The retrieval eval harness: its metrics on a hand-checked case, a slice of the committed set
through the real handlers on both backends, a planted forbidden hit reported as such beside a
control that is correctly withheld, and the command's exit status."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import pytest
import typer
from tests.pg import admin_url
from typer.testing import CliRunner

from lorestore.auth.actor import local_actor
from lorestore.cli.eval import eval_command
from lorestore.core.search import query_terms
from lorestore.evaluation.cases import EvalQuery, load_set
from lorestore.evaluation.report import ndcg_at, recall_at, reciprocal_rank, score
from lorestore.evaluation.runner import Outcome, run_eval
from lorestore.models import RecallParams, WriteParams
from lorestore.service import LessonService
from lorestore.storage.protocol import Store

EVALS = Path(__file__).resolve().parents[2] / "evals"
# One or two queries of each category, each answered in the top 5 on both backends today.
SLICE = (
    "identifier-01",
    "identifier-30",
    "paraphrase-01",
    "scope-ladder-01",
    "tenant-01",
    "tenant-07",
    "lifecycle-08",
    "lifecycle-19",
    "revision-02",
    "project-derived-02",
    "project-derived-21",
    "shadow-held-01",
    "shadow-held-03",
    "alias-10",
)


def query(**fields: Any) -> EvalQuery:
    base = {"id": "q", "category": "c", "as": "ann", "context": {}, "task": "t", "expected": []}
    return EvalQuery.model_validate(base | fields)


def test_metrics_on_a_hand_checked_case() -> None:
    ranked, relevant = ["x", "a", "y", "b"], ["a", "b", "c"]
    assert recall_at(ranked, relevant, 5) == pytest.approx(2 / 3)
    assert recall_at(ranked, relevant, 1) == 0.0
    assert reciprocal_rank(ranked, relevant) == 0.5
    assert reciprocal_rank(["x"], relevant) == 0.0
    # DCG = 1/log2(3) + 1/log2(5); ideal = 1 + 1/log2(3) + 1/log2(4)
    assert ndcg_at(ranked, relevant, 10) == pytest.approx(0.498189, abs=1e-6)
    assert ndcg_at(["a", "b", "c"], relevant, 10) == pytest.approx(1.0)
    assert ndcg_at(ranked, relevant, 1) == 0.0
    assert math.isclose(ndcg_at(["b"], ["b"], 10), 1.0)


def test_score_averages_ranked_queries_and_counts_forbidden_over_all() -> None:
    found = Outcome(query(id="a", expected=["k"]), "search", ("x", "k"), ())
    missed = Outcome(query(id="b", expected=["k"]), "search", ("x",), ())
    negative = Outcome(query(id="c", forbidden=["bad"]), "search", ("bad",), ("bad",))
    s = score([found, missed, negative])
    assert (s.queries, s.ranked_queries) == (3, 2)
    assert s.recall_at_5 == 0.5 and s.mrr == 0.25
    assert (s.forbidden_queries, s.forbidden_hits) == (1, 1)
    assert s.forbidden_rate == pytest.approx(1 / 3)


def test_neither_handler_is_expected_to_serve_what_recall_must_hold() -> None:
    """An agent's search with a context applies recall's rules: both are scored alike."""
    q = query(expected=["disputed", "fine"], forbidden_recall=["disputed"])
    for handler in ("search", "recall"):
        assert q.relevant(handler) == ["fine"] and q.banned(handler) == ["disputed"]


def test_committed_set_loads_and_is_consistent() -> None:
    evalset = load_set(EVALS)
    assert len(evalset.lessons) >= 400 and len(evalset.queries) >= 250
    categories = {q.category for q in evalset.queries}
    assert categories >= {
        "identifier",
        "paraphrase",
        "scope-ladder",
        "tenant",
        "lifecycle",
        "project-derived",
        "shadow-held",
        "paraphrase-far",
        "alias-identifier",
        "tenant-3",
        "ladder-strength",
    }
    assert len(evalset.setup.actors) >= 3 and evalset.setup.projects
    # A project rung comes from the repository: the new categories name no project.
    derived = [q for q in evalset.queries if q.category in ("project-derived", "shadow-held")]
    assert derived and all(q.context.project is None for q in derived)
    assert all(q.expected or q.forbidden or q.forbidden_recall for q in evalset.queries)


def test_far_paraphrases_share_no_word_with_their_lesson() -> None:
    """paraphrase-far tasks have no term in common with the lessons they expect (key, tags
    and text, as SQLite's porter tokenizer stems them): lexical search cannot find them; the
    positive control is a task that does share a word."""
    evalset = load_set(EVALS)
    lessons = {lesson.ref: lesson for lesson in evalset.lessons}
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(ref UNINDEXED, body, "
        "tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    for ref, lesson in lessons.items():
        conn.execute(
            "INSERT INTO t VALUES (?, ?)",
            (ref, f"{lesson.key} {' '.join(lesson.tags)} {lesson.value}"),
        )

    def shared(task: str, ref: str) -> list[str]:
        match = "SELECT count(*) FROM t WHERE t MATCH ? AND ref = ?"
        return [w for w in query_terms(task) if conn.execute(match, (f'"{w}"', ref)).fetchone()[0]]

    far = [q for q in evalset.queries if q.category == "paraphrase-far"]
    assert len(far) >= 25
    for q in far:
        for ref in q.expected:
            assert shared(q.task, ref) == [], q.id
    assert shared("summing floats lost cents", "rust-decimal-money")  # the control


def test_a_slice_of_the_set_through_the_real_handlers(store: Store) -> None:
    evalset = load_set(EVALS).only(ids=SLICE)
    assert sorted(q.id for q in evalset.queries) == sorted(SLICE)
    loaded, outcomes = run_eval(store, evalset)
    assert len(loaded.refused) == len(evalset.setup.refused_writes)  # tombstones held
    assert {(o.query.id, o.handler) for o in outcomes} == {
        (q, h) for q in SLICE for h in ("search", "recall")
    }
    assert [o for o in outcomes if o.forbidden_hits] == []
    for o in outcomes:
        relevant = o.query.relevant(o.handler)
        if relevant:
            assert recall_at(o.ranked, relevant, 5) == 1.0, (o.query.id, o.handler, o.ranked)
    # Bob searches in acme's repository: its rungs, acme's, add nothing (no refusal either).
    bob_in_acme = next(o for o in outcomes if o.query.id == "tenant-07" and o.handler == "search")
    assert bob_in_acme.ranked and not any(r.startswith("?") for r in bob_in_acme.ranked)


def test_recall_orders_by_the_task_but_shadows_by_the_ladder(service: LessonService) -> None:
    """The ranking change the eval measured: the task's best match is offered first even from
    a broader rung, yet a narrower lesson still shadows the same key further up, however much
    better the broader one matches."""
    person = local_actor(session="s")
    lessons = [
        ("branch::example/app::fix-x", "ci-python", "Only Python 3.11 here."),
        ("repo::example/app", "ci-python", "CI runs the Python 3.12 and 3.13 matrix jobs."),
        ("branch::example/app::fix-x", "deploy", "Deploys from this branch are manual."),
        ("global", "pg-dump", "pg_dump must not be older than the server it dumps."),
    ]
    for scope, key, value in lessons:
        service.memory_write(person, WriteParams(scope=scope, key=key, value=value))
    result = service.memory_recall(
        person,
        RecallParams(repo="example/app", branch="fix-x", task="pg_dump fails against the server"),
    )
    assert result.offered[0].lesson.key == "pg-dump"  # a global lesson, first
    matrix = service.memory_recall(
        person,
        RecallParams(repo="example/app", branch="fix-x", task="CI Python 3.12 3.13 matrix jobs"),
    )
    first = matrix.offered[0].lesson
    assert (first.scope, first.key) == ("branch::example/app::fix-x", "ci-python")
    assert [(h.scope, h.reasons) for h in matrix.held] == [
        ("repo::example/app", ["shadowed_by:branch::example/app::fix-x"])
    ]


def write_set(directory: Path, queries: list[dict[str, Any]]) -> Path:
    """A tiny eval set: a served lesson, an archived one with the same words, and a lesson
    whose first version was replaced."""
    directory.mkdir(parents=True, exist_ok=True)
    setup = {"start": "2026-03-01T09:00:00Z", "query_after_days": 1, "actors": {"ann": "user:ann"}}
    lessons = [
        {"as": "ann", "scope": "global", "key": "served", "value": "Vacuum the ledger nightly."},
        {"as": "ann", "scope": "global", "key": "gone", "value": "Vacuum the ledger hourly.",
         "archived": True},
        {"as": "ann", "scope": "global", "key": "ports", "value": "The ledger listens on 7001.",
         "history": ["The ledger listens on 6001."]},
    ]  # fmt: skip
    (directory / "setup.json").write_text(json.dumps(setup), encoding="utf-8")
    for name, rows in (("lessons", lessons), ("queries", queries)):
        text = "".join(json.dumps(r) + "\n" for r in rows)
        (directory / f"{name}.jsonl").write_text(text, encoding="utf-8")
    return directory


CONTROL = {
    "id": "control",
    "category": "lifecycle",
    "as": "ann",
    "context": {},
    "task": "vacuum the ledger; which port does it listen on",
    "expected": ["served", "ports"],
    "forbidden": ["gone", "ports@1"],  # archived, and the replaced version's text
}
PLANTED = CONTROL | {"id": "planted", "expected": ["ports"], "forbidden": ["served", "ports@2"]}
MISS = {"id": "miss", "expected": ["gone"], "forbidden": []}  # archived: never found


def test_a_planted_forbidden_hit_is_reported_beside_a_clean_control(
    store: Store, tmp_path: Path
) -> None:
    evalset = load_set(write_set(tmp_path / "set", [CONTROL, PLANTED]))
    _, outcomes = run_eval(store, evalset)
    by = {(o.query.id, o.handler): o for o in outcomes}
    for handler in ("search", "recall"):
        control, planted = by[("control", handler)], by[("planted", handler)]
        assert control.forbidden_hits == ()  # archived and replaced text are withheld
        assert set(control.ranked) == {"served", "ports"}
        # "served" is served, and so is version 2 of "ports": both listed as forbidden here.
        assert sorted(planted.forbidden_hits) == ["ports@2", "served"]
    assert score(outcomes).forbidden_queries == 2  # the planted query, once per handler


def eval_app() -> typer.Typer:
    """The command registered as the lead registers it on the main app."""
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """Keep `eval` a subcommand, as on the real `lorestore` app."""

    app.command("eval")(eval_command)
    return app


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(eval_app(), ["eval", *args], catch_exceptions=False)
    return result.exit_code, result.stdout


def test_the_command_fails_on_a_forbidden_hit_and_passes_without(tmp_path: Path) -> None:
    planted = write_set(tmp_path / "planted", [CONTROL, PLANTED])
    code, out = invoke("--data", str(planted), "--backend", "sqlite", "--json")
    report = json.loads(out)
    assert code == 1 and report["ok"] is False
    overall = report["runs"][0]["overall"]
    assert overall["forbidden_queries"] == 1 and overall["forbidden_hit_rate"] == 0.5
    clean = write_set(tmp_path / "clean", [CONTROL])
    code, out = invoke("--data", str(clean), "--backend", "sqlite", "--json")
    assert code == 0 and json.loads(out)["ok"] is True
    missing = write_set(tmp_path / "miss", [CONTROL, CONTROL | MISS])
    code, out = invoke("--data", str(missing), "--backend", "sqlite", "--min-mrr", "0.9", "--json")
    report = json.loads(out)
    assert code == 1 and report["shortfalls"] and report["ok"] is False  # a floor not met
    code, out = invoke("--data", str(missing), "--backend", "sqlite", "--min-mrr", "0.1", "--json")
    assert code == 0 and json.loads(out)["ok"] is True  # the control: a floor that is met
    assert invoke("--data", str(clean), "--min-mrr", "1.01")[0] == 2  # not a fraction


def test_the_command_on_postgres_uses_a_throwaway_database(tmp_path: Path) -> None:
    url = admin_url()
    clean = write_set(tmp_path / "clean", [CONTROL])

    def eval_databases() -> int:
        with psycopg.connect(url) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_database WHERE datname LIKE 'lorestore_eval_%'"
            ).fetchone()
        return int(row[0]) if row else 0

    before = eval_databases()
    code, out = invoke("--data", str(clean), "--database-url", url, "--json")
    assert code == 0, out
    assert [r["backend"] for r in json.loads(out)["runs"]] == ["sqlite"] * 2 + ["postgres"] * 2
    assert eval_databases() == before


def test_the_command_refuses_bad_input(tmp_path: Path) -> None:
    assert invoke("--data", str(tmp_path / "missing"))[0] == 2
    clean = write_set(tmp_path / "clean", [CONTROL])
    assert invoke("--data", str(clean), "--backend", "oracle")[0] == 2
    assert invoke("--data", str(clean), "--backend", "postgres")[0] == 2  # no --database-url
    assert invoke("--data", str(clean), "--query", "nope")[0] == 2


def test_the_command_finds_the_set_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`lorestore eval` outside the checkout failed on `evals/setup.json`: it now runs the
    checkout's set from anywhere, and a --data that is not a set says where the set is."""
    monkeypatch.chdir(tmp_path)
    first = json.loads((EVALS / "queries.jsonl").read_text().splitlines()[0])["id"]
    code, out = invoke("--backend", "sqlite", "--query", first, "--json")
    assert code in (0, 1), out  # it ran (the one query's score decides the status)
    assert json.loads(out)["runs"][0]["backend"] == "sqlite"
    code, _ = invoke("--data", str(tmp_path / "nowhere"))
    assert code == 2  # the control: an explicit folder that holds no set is refused
