"""The OpenAPI 3.1 document of the REST API, generated from the catalog and the same pydantic
models the service, MCP tools and CLI use: one schema for every surface."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from lorestore import __version__
from lorestore.operations import Operation, on_surface
from lorestore.transports.http import API_PREFIX, OPENAPI_PATH
from lorestore.transports.http.errors import ERROR_STATUSES

REF_TEMPLATE = "#/components/schemas/{model}"
_ERROR_TEXT = {
    400: "bad input (invalid_scope, invalid_key, invalid_argument, ...)",
    401: "no valid bearer token (unauthenticated)",
    403: "the token lacks the permission or does not cover the scope (forbidden)",
    404: "no such lesson, token or route (not_found)",
    409: "the lesson's state refuses it (version_conflict, conflict, archived, expired, "
    "rejected_value, cap_exceeded)",
    413: "the value or the request body is too large (value_too_large)",
    429: "too many requests for this token (rate_limited)",
    503: "the SQLite store stayed locked by another writer past the busy timeout (busy)",
    500: "the server or its store failed (storage_error, config_error, internal): see its log",
}


class ErrorDetail(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str = Field(description="stable error code, e.g. invalid_scope or not_found")
    message: str
    hint: str | None = Field(None, description="how to fix it, where lorestore knows")
    details: dict[str, Any] | None = None


class ErrorBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    error: ErrorDetail


class Health(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: Literal["ok"]
    version: str


def route_path(op: Operation) -> str:
    return f"{API_PREFIX}/{op.name}"


def is_array(schema: dict[str, Any]) -> bool:
    """Whether a property's schema is a list (repeated as ``?name=a&name=b`` in a query)."""
    branches = schema.get("anyOf", [schema])
    return any(branch.get("type") == "array" for branch in branches)


def _query_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A query parameter cannot be null: an optional one is simply left out."""
    branches = [b for b in schema.get("anyOf", []) if b.get("type") != "null"]
    if len(branches) != 1:
        return schema
    merged = {k: v for k, v in schema.items() if k not in ("anyOf", "default")}
    return {**merged, **branches[0]}


def is_object(schema: dict[str, Any]) -> bool:
    """Whether a property is a JSON object, which has no unambiguous query-string form."""
    branches = schema.get("anyOf", [schema])
    return any(b.get("type") == "object" or "$ref" in b for b in branches)


def _query_parameters(component: dict[str, Any]) -> list[dict[str, Any]]:
    """Scalars and lists of scalars; an object argument (e.g. recall's blobs) is POST-only."""
    required = set(component.get("required", []))
    return [
        {
            "name": name,
            "in": "query",
            "required": name in required,
            "description": prop.get("description", ""),
            "schema": _query_schema(prop),
            **({"style": "form", "explode": True} if is_array(prop) else {}),
        }
        for name, prop in component.get("properties", {}).items()
        if not is_object(prop)
    ]


def _responses(result_ref: dict[str, Any]) -> dict[str, Any]:
    error = {
        "content": {
            "application/json": {"schema": {"$ref": REF_TEMPLATE.format(model="ErrorBody")}}
        }
    }
    responses: dict[str, Any] = {
        "200": {
            "description": "the result",
            "content": {"application/json": {"schema": result_ref}},
        }
    }
    for status in (*ERROR_STATUSES, 500):
        responses[str(status)] = {"description": _ERROR_TEXT[status], **error}
    return responses


def _operation_item(
    op: Operation, refs: Mapping[Any, dict[str, Any]], schemas: dict[str, Any]
) -> dict[str, Any]:
    params_ref = refs[(op.params, "validation")]
    component = schemas[params_ref["$ref"].rsplit("/", 1)[1]]
    responses = _responses(refs[(op.result, "serialization")])
    tag = op.name.split("_", 1)[0]
    item: dict[str, Any] = {
        "post": {
            "operationId": op.name,
            "summary": op.summary,
            "tags": [tag],
            "requestBody": {
                "required": bool(component.get("required")),
                "content": {"application/json": {"schema": params_ref}},
            },
            "responses": responses,
        }
    }
    if not op.mutates:
        item["get"] = {
            "operationId": f"{op.name}_get",
            "summary": op.summary + " (arguments as query parameters)",
            "tags": [tag],
            "parameters": _query_parameters(component),
            "responses": responses,
        }
    return item


_NDJSON = {
    "application/x-ndjson": {
        "schema": {
            "type": "string",
            "description": "JSON Lines: a header line, then one record per line (docs/format.md)",
        }
    }
}


def _streaming_item(
    op: Operation, refs: Mapping[Any, dict[str, Any]], schemas: dict[str, Any]
) -> dict[str, Any]:
    """Export answers NDJSON (GET with query parameters, or POST with a JSON body); import
    takes an NDJSON body, with its options as query parameters, and answers its result."""
    params_ref = refs[(op.params, "validation")]
    component = schemas[params_ref["$ref"].rsplit("/", 1)[1]]
    base = {"summary": op.summary, "tags": [op.name.split("_", 1)[0]]}
    if op.mutates:
        post = base | {
            "operationId": op.name,
            "parameters": _query_parameters(component),
            "requestBody": {"required": True, "content": _NDJSON},
            "responses": _responses(refs[(op.result, "serialization")]),
        }
        return {"post": post}
    responses = _responses({})
    responses["200"] = {"description": "the export, streamed", "content": _NDJSON}
    post = base | {
        "operationId": op.name,
        "requestBody": {
            "required": False,
            "content": {"application/json": {"schema": params_ref}},
        },
        "responses": responses,
    }
    get = base | {
        "operationId": f"{op.name}_get",
        "parameters": _query_parameters(component),
        "responses": responses,
    }
    return {"post": post, "get": get}


def _item(op: Operation, refs: Mapping[Any, dict[str, Any]], schemas: dict[str, Any]) -> Any:
    return (_streaming_item if op.streaming else _operation_item)(op, refs, schemas)


@cache
def openapi_document() -> dict[str, Any]:
    operations = on_surface("rest")
    models: list[tuple[type[BaseModel], JsonSchemaMode]] = [(ErrorBody, "serialization")]
    models.append((Health, "serialization"))
    for op in operations:
        models.append((op.params, "validation"))
        if op.mutates or not op.streaming:  # an export's result is the stream itself
            models.append((op.result, "serialization"))
    refs, defs = models_json_schema(models, ref_template=REF_TEMPLATE)
    schemas: dict[str, Any] = defs["$defs"]
    paths = {route_path(op): _item(op, refs, schemas) for op in operations}
    paths[OPENAPI_PATH] = {
        "get": {
            "operationId": "openapi",
            "summary": "This document. Needs no token.",
            "security": [],
            "responses": {"200": {"description": "the OpenAPI document"}},
        }
    }
    paths["/healthz"] = {
        "get": {
            "operationId": "healthz",
            "summary": "Liveness: the server answers. Needs no token.",
            "security": [],
            "responses": {
                "200": {
                    "description": "the server is up",
                    "content": {"application/json": {"schema": refs[(Health, "serialization")]}},
                }
            },
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "lorestore",
            "version": __version__,
            "description": "A lesson store for coding agents. One route per operation: "
            "POST with the arguments as a JSON body; read-only operations also answer GET "
            "with the arguments as query parameters.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }


def params_schema(op: Operation) -> dict[str, Any]:
    """The component schema of an operation's arguments, as published."""
    ref: str = openapi_document()["paths"][route_path(op)]["post"]["requestBody"]["content"][
        "application/json"
    ]["schema"]["$ref"]
    schema: dict[str, Any] = openapi_document()["components"]["schemas"][ref.rsplit("/", 1)[1]]
    return schema
