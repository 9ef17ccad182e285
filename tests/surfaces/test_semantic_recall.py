"""Hybrid retrieval through the REST handler, on both backends: a task that shares no word
with a lesson finds it through the semantic pass even when neither the full-text pass nor the
newest lessons of its rung bring it in (a lexical-only server on the same database does not);
and a lesson that is the task's best semantic match but disputed, rejected or another
tenant's is still never offered, beside a control that is."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.serving import Api, make_api

from lorestore.auth.actor import local_actor
from lorestore.models import DisputeParams, RejectParams, WriteParams
from lorestore.semantic.model import Embedder, embedding_text
from lorestore.service import LessonService

SCOPE = "repo::acme/app"
PERSON = local_actor(session="s1")
# No word in common with the lesson (a paraphrase, as in issue 21).
TASK = "spreadsheet export"
TARGET = "Reports are written as CSV files for Excel."
# The lessons of the eligibility test: the example, "postgresql" finds "Postgres".
PG_TASK = "postgresql"
PG_TEXTS = [
    "Integration tests need the local Postgres server on port 5432.",
    "Integration checks depend on a local Postgres server listening on 5432.",
    "The integration tests require a running Postgres instance locally.",
    "Before the integration tests, start Postgres on localhost.",
]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "postgres":
        from tests.migrating import pg_url

        template = request.getfixturevalue("pg_template")
        name = request.getfixturevalue("pg_database")
        monkeypatch.setenv("LORESTORE_DATABASE_URL", pg_url(template.app_url(name)))
    return str(request.param)


@contextmanager
def server(home: Path, *, semantic: bool = True) -> Iterator[Api]:
    made = make_api(home, semantic=semantic)
    api = next(made)
    try:
        yield api
    finally:
        next(made, None)


def write(service: LessonService, key: str, value: str, actor: Any = PERSON) -> str:
    return service.memory_write(actor, WriteParams(scope=SCOPE, key=key, value=value)).lesson.id


def fillers(service: LessonService, n: int = 30) -> None:
    """Newer lessons than the rest, unrelated to the task: recall's newest-per-rung pass
    (25) is all theirs, so an older lesson is a candidate only if a pass finds it."""
    modules = ["billing", "search", "auth", "cache", "mailer"]
    for i in range(n):
        write(service, f"note-{i}", f"The {modules[i % 5]} module logs at info level ({i}).")


def recall(api: Api, task: str = TASK) -> dict[str, Any]:
    return api.ok("memory_recall", {"repo": "acme/app", "task": task})


def test_a_paraphrase_is_found_by_the_semantic_pass_alone(backend: str, home: Path) -> None:
    with server(home) as api:
        write(api.service, "reports", TARGET)
        fillers(api.service)
        result = recall(api)
    assert result["context"]["retrieval"].startswith("hybrid:wordllama/")
    best = result["offered"][0]
    assert best["lesson"]["key"] == "reports"
    assert any(r.startswith("relevance:") for r in best["reasons"])
    # The control: the same database served lexically (the extra switched off) neither offers
    # nor holds it: no word matched and it is older than the 25 newest of its rung.
    with server(home, semantic=False) as lexical:
        plain = recall(lexical)
    assert plain["context"]["retrieval"] == "lexical: switched off (LORESTORE_SEMANTIC=off)"
    weighed = [o["lesson"]["key"] for o in plain["offered"]] + [h["key"] for h in plain["held"]]
    assert "reports" not in weighed and len(weighed) == 25


def test_the_best_semantic_match_is_not_offered_when_it_may_not_be(
    backend: str, home: Path
) -> None:
    # Roles by similarity to the task: each forbidden lesson is nearer the task than the
    # control, so a pass that let one through would offer it, and before the control.
    model = Embedder("test")
    vectors = model.embed([embedding_text([], t) for t in PG_TEXTS])
    sims = (vectors @ model.embed([PG_TASK])[0]).tolist()
    nearest_first = sorted(range(len(PG_TEXTS)), key=lambda n: -sims[n])
    assert len({round(sims[n], 4) for n in nearest_first}) == len(PG_TEXTS)
    roles = ("rejected", "theirs", "disputed", "control")
    texts = {role: PG_TEXTS[n] for role, n in zip(roles, nearest_first, strict=True)}
    keys = {role: f"db-{n}" for role, n in zip(roles, nearest_first, strict=True)}
    with server(home) as api:
        ids = {k: write(api.service, keys[k], v) for k, v in texts.items() if k != "theirs"}
        mallory = local_actor(principal="user:mallory")
        ids["theirs"] = write(api.service, keys["theirs"], texts["theirs"], mallory)
        api.service.memory_dispute(
            PERSON, DisputeParams(scope=SCOPE, key=keys["disputed"], reason="port moved")
        )
        api.service.memory_reject(
            PERSON, RejectParams(scope=SCOPE, key=keys["rejected"], reason="not true")
        )
        fillers(api.service)
        result = recall(api, PG_TASK)
    offered = {o["lesson"]["id"] for o in result["offered"]}
    held = {h["lesson_id"]: h["reasons"] for h in result["held"]}
    assert ids["control"] in offered  # the positive control, found by meaning alone
    assert result["offered"][0]["lesson"]["id"] == ids["control"]
    assert held[ids["disputed"]] == ["disputed"] and ids["disputed"] not in offered
    for forbidden in ("rejected", "theirs"):
        assert ids[forbidden] not in offered and ids[forbidden] not in held
        assert texts[forbidden] not in result["text"]


def search(api: Api, query: str, **extra: Any) -> list[dict[str, Any]]:
    body = {"query": query, "scopes": [SCOPE]} | extra
    hits: list[dict[str, Any]] = api.ok("memory_search", body)["hits"]
    return hits


def test_search_finds_by_meaning_under_its_own_conditions(backend: str, home: Path) -> None:
    with server(home) as api:
        ids = {
            "reports": write(api.service, "reports", TARGET),
            "rejected": write(api.service, "old-reports", "Exports are CSV sheets for Excel."),
            "theirs": write(
                api.service,
                "their-reports",
                "Spreadsheets: CSV for Excel.",
                local_actor(principal="user:mallory"),
            ),
        }
        api.service.memory_reject(
            PERSON, RejectParams(scope=SCOPE, key="old-reports", reason="not true")
        )
        tagged = WriteParams(scope=SCOPE, key="tagged", value="Invoices go out as CSV for Excel.")
        ids["tagged"] = api.service.memory_write(
            PERSON, tagged.model_copy(update={"tags": ["billing"]})
        ).lesson.id
        fillers(api.service, 5)
        found = search(api, TASK)
        only_billing = search(api, TASK, tags=["billing"])
    with server(home, semantic=False) as lexical:
        plain = search(lexical, TASK)
    assert plain == []  # the control: no word of the query is in any lesson
    got = [h["lesson"]["id"] for h in found]
    assert set(got) == {ids["reports"], ids["tagged"]}  # the unrelated fillers are not hits
    assert all(h["score"] > 0 and h["snippet"] for h in found)
    assert ids["rejected"] not in got and ids["theirs"] not in got
    assert [h["lesson"]["id"] for h in only_billing] == [ids["tagged"]]
