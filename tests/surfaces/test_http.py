"""The REST API in process (Starlette's TestClient on the real application, real SQLite files):
routes and OpenAPI generated from the catalog, results equal to the CLI's ``--json``, GET beside
POST, and each error code answered with its status and the DESIGN §11 body."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.routing import Route
from tests.conftest import Cli
from tests.serving import Api, error_of, make_api

from lorestore.core.errors import LorestoreError
from lorestore.operations import CATALOG, Operation, on_surface
from lorestore.transports.http.errors import status_of
from lorestore.transports.http.openapi import REF_TEMPLATE, is_object, openapi_document

S = "repo::acme/app"


@pytest.fixture
def api(home: Path) -> Iterator[Api]:
    yield from make_api(home)


def test_every_rest_operation_is_a_route_with_its_schemas(api: Api) -> None:
    app: Any = api.client.app
    routes = {r.path: r for r in app.routes if isinstance(r, Route)}
    document = openapi_document()
    schemas = document["components"]["schemas"]
    for op in CATALOG:
        path = f"/api/v1/{op.name}"
        if "rest" not in op.surfaces:
            assert path not in routes and path not in document["paths"], op.name
            continue
        assert routes[path].methods is not None
        expected = {"POST"} if op.mutates else {"GET", "HEAD", "POST"}
        assert routes[path].methods == expected, op.name
        item = document["paths"][path]
        assert set(item) == {m.lower() for m in expected - {"HEAD"}}
        if op.streaming:
            _check_streaming_item(op, item, schemas)
            continue
        body = item["post"]["requestBody"]["content"]["application/json"]["schema"]
        result = item["post"]["responses"]["200"]["content"]["application/json"]["schema"]
        published = schemas[body["$ref"].rsplit("/", 1)[1]]
        own = op.params.model_json_schema(ref_template=REF_TEMPLATE)
        assert published == {k: v for k, v in own.items() if k != "$defs"}, op.name
        out = op.result.model_json_schema(mode="serialization", ref_template=REF_TEMPLATE)
        assert schemas[result["$ref"].rsplit("/", 1)[1]] == {
            k: v for k, v in out.items() if k != "$defs"
        }
        if not op.mutates:
            names = [p["name"] for p in item["get"]["parameters"]]
            scalar = [n for n, f in published["properties"].items() if not is_object(f)]
            assert names == scalar, op.name
            assert set(published["properties"]) - set(names) <= {"blobs"}, op.name
    operations = [p for p in document["paths"] if p.startswith("/api/v1/") and "." not in p]
    assert len(operations) == len(on_surface("rest"))
    assert "/api/v1/openapi.json" in document["paths"]  # the document lists itself
    assert "500" in document["paths"]["/api/v1/memory_write"]["post"]["responses"]


def _check_streaming_item(op: Operation, item: dict[str, Any], schemas: dict[str, Any]) -> None:
    """Export and import stream NDJSON: export takes its arguments as a JSON body or as query
    parameters; import takes them as query parameters beside its NDJSON body."""
    own = op.params.model_json_schema(ref_template=REF_TEMPLATE)
    own = {k: v for k, v in own.items() if k != "$defs"}
    ndjson = {"application/x-ndjson"}
    if op.mutates:
        post = item["post"]
        assert set(post["requestBody"]["content"]) == ndjson, op.name
        assert [p["name"] for p in post["parameters"]] == list(own["properties"]), op.name
        result = post["responses"]["200"]["content"]["application/json"]["schema"]
        out = op.result.model_json_schema(mode="serialization", ref_template=REF_TEMPLATE)
        assert schemas[result["$ref"].rsplit("/", 1)[1]] == {
            k: v for k, v in out.items() if k != "$defs"
        }
        return
    body = item["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert schemas[body["$ref"].rsplit("/", 1)[1]] == own, op.name
    assert [p["name"] for p in item["get"]["parameters"]] == list(own["properties"]), op.name
    for method in ("get", "post"):
        assert set(item[method]["responses"]["200"]["content"]) == ndjson, op.name


def test_openapi_and_health_need_no_token(api: Api) -> None:
    document = api.client.get("/api/v1/openapi.json")
    assert document.status_code == 200 and document.json()["openapi"] == "3.1.0"
    assert api.client.get("/healthz").json()["status"] == "ok"
    # Positive control for the token being required everywhere else.
    assert api.client.post("/api/v1/memory_scopes").status_code == 401
    assert api.post("memory_scopes").status_code == 200


def test_results_equal_the_cli_json(api: Api, cli: Cli) -> None:
    written = api.ok("memory_write", {"scope": S, "key": "pg", "value": "Use local Postgres"})
    assert written["result"] == "created"
    assert api.ok("memory_read", {"scope": S, "key": "pg"}) == cli.ok("read", S, "pg")
    search = {"query": "postgres", "scopes": [S]}
    assert api.ok("memory_search", search) == cli.ok("search", "postgres", "-s", S)
    assert api.ok("memory_history", {"scope": S, "key": "pg"}) == cli.ok("history", S, "pg")
    assert api.ok("memory_scopes") == cli.ok("scopes")


def test_get_takes_the_arguments_as_query_parameters(api: Api) -> None:
    api.ok("memory_write", {"scope": S, "key": "pg", "value": "postgres here", "tags": ["db"]})
    api.ok("memory_write", {"scope": "global", "key": "pg", "value": "postgres there"})
    both = {"query": "postgres", "scopes": [S, "global"], "limit": 5}
    got = api.get("memory_search", query="postgres", scopes=[S, "global"], limit="5")
    assert got.status_code == 200 and got.json() == api.ok("memory_search", both)
    assert len(got.json()["hits"]) == 2
    tagged = api.get("memory_list", scope=S, tags=["db"])
    assert [x["key"] for x in tagged.json()["lessons"]] == ["pg"]
    assert error_of(api.get("memory_read", scope=S, key="pg", bogus="1"), 400)["code"] == (
        "invalid_argument"
    )
    assert error_of(api.get("memory_list", scope=S, limit="lots"), 400)["code"] == (
        "invalid_argument"
    )
    # Mutations are POST only.
    refused = api.client.get(
        "/api/v1/memory_write", headers={"Authorization": f"Bearer {api.token}"}
    )
    assert error_of(refused, 405)["code"] == "invalid_argument"
    assert "POST" in refused.headers["allow"]


def test_bad_input_is_400_and_changes_nothing(api: Api) -> None:
    bad_scope = error_of(api.post("memory_write", {"scope": "repo:acme/app", "key": "k"}), 400)
    assert bad_scope["code"] == "invalid_value"  # value is missing: the schema speaks first
    bad = error_of(
        api.post("memory_write", {"scope": "repo:acme/app", "key": "k", "value": "v"}), 400
    )
    assert (
        bad["code"] == "invalid_scope"
        and bad["hint"] == 'use "::" as the separator: "repo::acme/app"'
    )
    extra = error_of(api.post("memory_read", {"scope": S, "key": "k", "extra": 1}), 400)
    assert extra["code"] == "invalid_argument" and "extra" in extra["message"]
    not_json = api.client.post(
        "/api/v1/memory_read",
        content=b"{not json",
        headers={"Authorization": f"Bearer {api.token}"},
    )
    assert error_of(not_json, 400)["code"] == "invalid_argument"
    array = error_of(api.post("memory_read", [1, 2]), 400)
    assert array["code"] == "invalid_argument"
    surrogate = api.client.post(
        "/api/v1/memory_write",
        content=b'{"scope": "global", "key": "k", "value": "\\ud800"}',
        headers={"Authorization": f"Bearer {api.token}"},
    )
    assert error_of(surrogate, 400)["code"] == "invalid_value"  # the field's, as on the CLI
    big = error_of(api.post("memory_write", {"scope": S, "key": "k", "value": "x" * 70_000}), 413)
    assert big["code"] == "value_too_large"
    assert api.ok("memory_scopes")["scopes"] == []


def test_state_errors_are_404_and_409(api: Api) -> None:
    assert error_of(api.post("memory_read", {"scope": S, "key": "nope"}), 404)["code"] == (
        "not_found"
    )
    api.ok("memory_write", {"scope": S, "key": "k", "value": "first"})
    stale = api.post("memory_write", {"scope": S, "key": "k", "value": "2nd", "if_version": 7})
    assert error_of(stale, 409)["code"] == "version_conflict"
    api.ok("memory_reject", {"scope": S, "key": "k", "reason": "wrong"})
    again = api.post("memory_write", {"scope": S, "key": "other", "value": "First"})
    assert error_of(again, 409)["code"] == "rejected_value"
    api.ok("memory_write", {"scope": S, "key": "arch", "value": "to archive"})
    api.ok("memory_archive", {"scope": S, "key": "arch"})
    archived = api.post("memory_write", {"scope": S, "key": "arch", "value": "new"})
    assert error_of(archived, 409)["code"] == "archived"
    unknown = api.client.post("/api/v1/nope", headers={"Authorization": f"Bearer {api.token}"})
    assert error_of(unknown, 404)["code"] == "not_found"


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("invalid_scope", 400),
        ("invalid_argument", 400),
        ("value_too_large", 413),
        ("not_found", 404),
        ("version_conflict", 409),
        ("conflict", 409),
        ("archived", 409),
        ("expired", 409),
        ("rejected_value", 409),
        ("unauthenticated", 401),
        ("forbidden", 403),
        ("rate_limited", 429),
        ("internal", 500),
    ],
)
def test_every_code_has_its_status(code: str, status: int) -> None:
    assert status_of(LorestoreError(code, "m")) == status


def test_refusals_carry_the_fields_code_as_on_the_other_surfaces(api: Api) -> None:
    """A lone surrogate escape is valid JSON that pydantic's parser refuses: REST still
    answers with the field's code, as the CLI and MCP do; a missing ``scopes`` is
    ``invalid_scope``, as an empty one is."""
    raw = b'{"scope": "global", "key": "a\\ud800", "value": "v"}'
    headers = {"Authorization": f"Bearer {api.token}", "Content-Type": "application/json"}
    surrogate = api.client.post("/api/v1/memory_write", content=raw, headers=headers)
    assert error_of(surrogate, 400)["code"] == "invalid_key"
    broken = api.client.post("/api/v1/memory_write", content=b'{"scope": ', headers=headers)
    assert error_of(broken, 400)["code"] == "invalid_argument"  # not JSON at all
    assert error_of(api.post("memory_search", {"query": "x"}), 400)["code"] == "invalid_scope"
    assert error_of(api.post("memory_search", {"query": "x", "scopes": []}), 400)["code"] == (
        "invalid_scope"
    )
    api.ok("memory_write", {"scope": "global", "key": "a", "value": "v"})  # the control
    hits = api.ok("memory_search", {"query": "v", "scopes": ["global"]})["hits"]
    assert [h["lesson"]["key"] for h in hits] == ["a"]
