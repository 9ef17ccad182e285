"""The MCP tools' output schemas (the result models' schemas, self-contained and in the form a
validator checks fastest) accept and refuse exactly what pydantic's own schemas do: checked on
real results of every read and write tool and on thousands of single-point mutations of them."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from lorestore.auth.actor import local_actor
from lorestore.operations import BY_NAME, on_surface
from lorestore.service import LessonService
from lorestore.storage.sqlite import SQLiteStore
from lorestore.transports.mcp.server import call_tool, local_invoker, result_schema

SCOPE = "repo::acme/app"


def _results(store: SQLiteStore) -> dict[str, Any]:
    """One real structured result per tool, from a store holding lessons with every optional
    part filled (tags, expiry, provenance, dependencies, a review, extension fields)."""
    invoke = local_invoker(LessonService(store), local_actor(session="s1"))
    calls: list[tuple[str, dict[str, Any]]] = [
        ("memory_write", {"scope": SCOPE, "key": "db", "value": "Start the database first.",
                          "tags": ["ci", "db"], "ttl_days": 30,
                          "source": {"agent": "claude", "commit": "a" * 40, "pr": 7},
                          "depends_on": [{"path": "Makefile", "blob": "b" * 40}]}),
        ("memory_write", {"scope": SCOPE, "key": "events", "value": "Never bulk-insert events."}),
        ("memory_verify", {"scope": SCOPE, "key": "events", "note": "checked"}),
        ("memory_write", {"scope": "global", "key": "style", "value": "Prefer small diffs."}),
        ("memory_read", {"scope": SCOPE, "key": "events"}),
        ("memory_list", {"scope": SCOPE, "limit": 1}),
        ("memory_search", {"query": "database events", "scopes": [SCOPE, "global"]}),
        ("memory_history", {"scope": SCOPE, "key": "db"}),
        ("memory_scopes", {}),
        ("memory_audit", {"scope": SCOPE, "limit": 2}),
        ("memory_recall", {"repo": "acme/app", "task": "bulk insert events"}),
        ("memory_archive", {"scope": "global", "key": "style"}),
        ("memory_review_queue", {}),
    ]  # fmt: skip
    results: dict[str, Any] = {}
    for name, args in calls:
        if name not in BY_NAME:
            continue
        result = call_tool(invoke, name, args)
        assert not result.is_error, (name, result.structured_content)
        results[name] = result.structured_content
        if name == "memory_recall":
            recall_id = result.structured_content["recall_id"]
            explained = call_tool(invoke, "memory_explain", {"recall_id": recall_id})
            assert not explained.is_error, explained.structured_content
            results["memory_explain"] = explained.structured_content
    return results


def _mutations(doc: Any) -> Iterator[Any]:
    """Every document that differs from ``doc`` at one point: a value of another JSON type, a
    key removed, an unknown key added."""
    replacements: list[Any] = [None, 7, 1.5, "x", True, [], {}, "bogus-enum-value"]

    def at(node: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], Any]]:
        yield path, node
        if isinstance(node, dict | list):
            for key, child in node.items() if isinstance(node, dict) else enumerate(node):
                yield from at(child, (*path, key))

    def changed(path: tuple[Any, ...], change: Any) -> Any:
        out = copy.deepcopy(doc)
        parent = out
        for key in path[:-1]:
            parent = parent[key]
        change(parent, path[-1])
        return out

    for path, node in at(doc, ()):
        if isinstance(node, dict):
            yield changed((*path, "zz_unknown"), lambda p, k: p.__setitem__(k, 1))
        if not path:
            continue
        for value in replacements:
            if value != node:
                yield changed(path, lambda p, k, v=value: p.__setitem__(k, v))
        if isinstance(path[-1], str):
            yield changed(path, lambda p, k: p.pop(k))


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    store = SQLiteStore(tmp_path_factory.mktemp("schema") / "lorestore.db")
    try:
        return _results(store)
    finally:
        store.close()


def test_every_tool_schema_is_self_contained_and_valid() -> None:
    for op in on_surface("mcp"):
        schema = result_schema(op.result)
        Draft202012Validator.check_schema(schema)
        text = json.dumps(schema)
        assert "$ref" not in text and '"title"' not in text, op.name


def test_compact_schemas_decide_like_pydantics(results: dict[str, Any]) -> None:
    assert {"memory_list", "memory_search", "memory_recall", "memory_write"} <= set(results)
    checked = 0
    for name, doc in results.items():
        model = BY_NAME[name].result
        ours = Draft202012Validator(result_schema(model))
        theirs = Draft202012Validator(model.model_json_schema(mode="serialization"))
        assert ours.is_valid(doc) and theirs.is_valid(doc), name  # the positive control
        refused = 0
        for mutant in _mutations(doc):
            verdict = theirs.is_valid(mutant)
            assert ours.is_valid(mutant) == verdict, (name, mutant)
            refused += not verdict
            checked += 1
        assert refused, f"no mutation of {name} was refused: the check would prove nothing"
    assert checked > 1000
