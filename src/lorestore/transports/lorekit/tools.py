"""LoreKit's MCP tools (``memory.write``, ``memory.list``, ``org.list``, ...): their input
schemas, as LoreKit's tool catalog gives them, and their results in the shape LoreKit's hosted
endpoint returns: the payload as JSON in one text item, a failure as a JSON-RPC error. Each
tool calls the same adapter as its REST route."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from lorestore.auth.actor import Actor
from lorestore.core.errors import LorestoreError
from lorestore.transports.lorekit.adapters import LoreKitOperations
from lorestore.transports.lorekit.fields import (
    MAX_LIMIT,
    MemoryAddress,
    MemoryDelete,
    MemoryList,
    MemoryPurge,
    MemorySearch,
    MemoryWrite,
    OrgCreate,
    parse,
)

_S: dict[str, Any] = {"type": "string"}
_TAGS: dict[str, Any] = {"type": "array", "items": _S}
_ADDRESS = {"scope": _S, "key": _S}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}


def _schema(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


SCHEMAS: dict[str, tuple[str, dict[str, Any]]] = {
    "memory.write": (
        "Write (upsert) a memory at scope + key. A new value for a lesson a person verified "
        "is kept as a proposed revision for review.",
        _schema(
            ["scope", "key", "value"],
            **_ADDRESS,
            value=_S,
            tags=_TAGS,
            source_agent=_S,
            trigger=_S,
            kind={"type": "string", "enum": ["lesson", "bus", "signal"]},
            host={"type": "string", "maxLength": 64},
            created_at={"type": "string", "format": "date-time"},
            org=_S,
            ttl_days={"type": "integer", "minimum": 1, "maximum": 365},
            clear_ttl={"type": "boolean"},
            origin_repo=_S,
            origin_branch=_S,
            origin_commit=_S,
            origin_pr={"type": "integer", "minimum": 1},
        ),
    ),
    "memory.read": ("Read one memory by scope + key.", _schema(["scope", "key"], **_ADDRESS)),
    "memory.list": (
        "List the memories of one scope, newest first.",
        _schema(
            ["scope"],
            scope=_S,
            tags=_TAGS,
            limit=_LIMIT,
            cursor=_S,
            order={"type": "string", "enum": ["recency", "rank"]},
            kind=_S,
            host=_S,
            view={"type": "string", "enum": ["full", "summary"]},
        ),
    ),
    "memory.delete": (
        "Archive a memory, or with force erase it (an admin's call in lorestore).",
        _schema(["scope", "key"], **_ADDRESS, force={"type": "boolean"}, org=_S),
    ),
    "memory.search": (
        "Full-text search over the named scopes, best match first.",
        _schema(["q"], q=_S, scopes=_TAGS, tags=_TAGS, limit=_LIMIT, cursor=_S),
    ),
    "memory.archive": (
        "Archive a memory (restore brings it back).",
        _schema(["scope", "key"], **_ADDRESS),
    ),
    "memory.scopes": ("The scopes you can read, with their counts.", _schema([])),
    "memory.restore": ("Restore an archived memory.", _schema(["scope", "key"], **_ADDRESS)),
    "memory.purge": (
        "Erase memories archived longer than retention_days (an admin's call).",
        _schema([], retention_days={"type": "integer", "minimum": 1, "maximum": 365}),
    ),
    "memory.purge_expired": ("Erase expired memories (an admin's call).", _schema([])),
    "org.create": ("Create an org.", _schema(["slug", "name"], slug=_S, name=_S)),
    "org.list": ("The orgs you belong to.", _schema([])),
}

Tool = Callable[[LoreKitOperations, Actor, dict[str, Any]], Any]


def _write(ops: LoreKitOperations, actor: Actor, args: dict[str, Any]) -> Any:
    written = ops.write(actor, parse(MemoryWrite, args))
    entry = written.entry
    result = {"id": entry["id"], "created_at": entry["created_at"]}
    if entry["expires_at"]:
        result["expires_at"] = entry["expires_at"]
    if written.proposed:  # a success, as LoreKit's upsert would be, with what happened
        result["notice"] = "a person verified this memory: the new value awaits their review"
    return result


def _read(ops: LoreKitOperations, actor: Actor, args: dict[str, Any]) -> Any:
    found = ops.read(actor, parse(MemoryAddress, args))
    return None if found is None else {"value": found["value"], "updated_at": found["updated_at"]}


def _list(ops: LoreKitOperations, actor: Actor, args: dict[str, Any]) -> Any:
    args = dict(args)
    view = args.pop("view", "full")
    args.pop("order", None)  # lorestore lists newest first; "rank" is a search's order
    for name in ("kind", "host"):
        if isinstance(args.get(name), str):
            args[name] = [v for v in args[name].split(",") if v]
    page = ops.list_page(actor, parse(MemoryList, args))
    rows = [{k: e[k] for k in ("id", "key", "value", "tags", "updated_at")} for e in page.entries]
    if view == "summary":
        for row in rows:
            value = row.pop("value")
            row |= {"value_bytes": len(value.encode()), "preview": value[:200]}
    return {"entries": rows, "hasMore": page.has_more, "nextCursor": page.next_cursor}


def _search(ops: LoreKitOperations, actor: Actor, args: dict[str, Any]) -> Any:
    fields = ("id", "key", "value", "scope", "tags", "updated_at", "rank")
    found = ops.search(actor, parse(MemorySearch, args))
    entries = [{k: e[k] for k in fields} for e in found]
    return {"entries": entries, "hasMore": False, "nextCursor": None}


def _refused(verb: str, error: LorestoreError) -> dict[str, Any] | None:
    """LoreKit answers a missing or foreign memory with ``{verb: false, reason}``."""
    if error.code in ("not_found", "forbidden"):
        return {verb: False, "reason": error.code, "message": error.message}
    return None


def _delete(ops: LoreKitOperations, actor: Actor, args: dict[str, Any]) -> Any:
    body = parse(MemoryDelete, args)
    try:
        ops.delete(actor, body)
    except LorestoreError as error:
        if (refused := _refused("deleted", error)) is None:
            raise
        return refused | {"archived": False}
    return {"deleted": body.force, "archived": not body.force}


def _archive(ops: LoreKitOperations, actor: Actor, args: dict[str, Any]) -> Any:
    try:
        ops.archive(actor, parse(MemoryAddress, args))
    except LorestoreError as error:
        if (refused := _refused("archived", error)) is None:
            raise
        return refused
    return {"archived": True}


def _restore(ops: LoreKitOperations, actor: Actor, args: dict[str, Any]) -> Any:
    try:
        ops.restore(actor, parse(MemoryAddress, args))
    except LorestoreError as error:
        if (refused := _refused("restored", error)) is None:
            raise
        return refused
    return {"restored": True}


def _org_create(ops: LoreKitOperations, actor: Actor, args: dict[str, Any]) -> Any:
    created = ops.org_create(actor, parse(OrgCreate, args))
    return {k: created[k] for k in ("id", "slug", "name")}


TOOLS: dict[str, Tool] = {
    "memory.write": _write,
    "memory.read": _read,
    "memory.list": _list,
    "memory.delete": _delete,
    "memory.search": _search,
    "memory.archive": _archive,
    "memory.scopes": lambda ops, actor, args: {"scopes": ops.scopes(actor)},
    "memory.restore": _restore,
    "memory.purge": lambda ops, actor, args: {"purged": ops.purge(actor, parse(MemoryPurge, args))},
    "memory.purge_expired": lambda ops, actor, args: {"purged": ops.purge_expired(actor)},
    "org.create": _org_create,
    "org.list": lambda ops, actor, args: {"entries": ops.org_list(actor)},
}


def call(ops: LoreKitOperations, actor: Actor, name: str, args: dict[str, Any] | None) -> str:
    """A tool's payload as LoreKit's JSON text; ``LorestoreError`` when it is refused."""
    tool = TOOLS.get(name)
    if tool is None:
        raise LorestoreError(
            "invalid_argument", f"unknown tool {name!r}", hint="tools: " + ", ".join(TOOLS)
        )
    return json.dumps(tool(ops, actor, args or {}), ensure_ascii=False)
