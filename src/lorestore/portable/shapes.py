"""The known fields of each record of the interchange format, and how unknown fields travel:
``split`` takes them out of a record into its ``ext`` on import, ``merge`` puts them back on
export, at the level they came from.

``ext`` holds a record's unknown fields by name. The unknown fields of a known nested object
(``source``, ``review``) sit in ``ext`` under that object's name; those of a list item
(``depends_on``, ``versions``) under the list's name, then the item's identifying field
(``path``, ``version``). A known field's name never holds anything else, so the layout is
unambiguous. docs/format.md describes it for other tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lorestore.core.records import Source


@dataclass(frozen=True, slots=True)
class Shape:
    """Known fields in the order they are written; the known objects and lists of objects
    whose own unknown fields are kept."""

    fields: tuple[str, ...]
    nested: Mapping[str, Shape] = field(default_factory=dict)
    lists: Mapping[str, tuple[Shape, str]] = field(default_factory=dict)
    names: frozenset[str] = field(init=False)  # the fields, for a fast membership test

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", frozenset(self.fields))


SOURCE = Shape(tuple(Source.model_fields))
REVIEW = Shape(("by", "at", "note"))
DEPENDENCY = Shape(("path", "blob"))
VERSION = Shape(
    (
        "version",
        "state",
        "value",
        "value_digest",
        "tags",
        "valid_from",
        "valid_to",
        "recorded_at",
        "accepted_at",
        "actor",
        "source",
    ),
    nested={"source": SOURCE},
)
LESSON = Shape(
    (
        "type",
        "id",
        "owner",
        "scope",
        "key",
        "kind",
        "value",
        "tags",
        "trust",
        "status",
        "version",
        "seen_count",
        "valid_from",
        "valid_to",
        "recorded_at",
        "created_at",
        "updated_at",
        "archived_at",
        "expires_at",
        "source",
        "depends_on",
        "review",
        "pending_revision",
        "versions",
    ),
    nested={"source": SOURCE, "review": REVIEW},
    lists={"depends_on": (DEPENDENCY, "path"), "versions": (VERSION, "version")},
)
TOMBSTONE = Shape(
    (
        "type",
        "id",
        "owner",
        "scope",
        "digest",
        "reason",
        "actor",
        "time",
        "lesson_id",
        "lifted_at",
        "lifted_by",
        "lift_reason",
    )
)
POLICY = Shape(
    ("type", "owner", "scope", "revision_policy", "require_review", "updated_at", "updated_by")
)
PROJECT = Shape(("type", "owner", "scope", "repo", "added_at", "added_by"))
HEADER = Shape(("format", "version", "exported_at", "source"))


def split(record: Mapping[str, Any], shape: Shape) -> tuple[dict[str, Any], dict[str, Any]]:
    """The record's known fields, and its unknown ones in the ``ext`` layout."""
    known: dict[str, Any] = {}
    ext: dict[str, Any] = {}
    for name, value in record.items():
        if name not in shape.names:
            ext[name] = value
        elif name in shape.nested and isinstance(value, dict):
            known[name], inner = split(value, shape.nested[name])
            if inner:
                ext[name] = inner
        elif name in shape.lists and isinstance(value, list):
            known[name], kept = _split_items(value, *shape.lists[name])
            if kept:
                ext[name] = kept
        else:
            known[name] = value
    return known, ext


def _split_items(items: list[Any], shape: Shape, ident: str) -> tuple[list[Any], dict[str, Any]]:
    out: list[Any] = []
    kept: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict):
            out.append(item)  # validation refuses it
            continue
        known, inner = split(item, shape)
        out.append(known)
        if inner:
            kept[_item_key(item.get(ident))] = inner
    return out, kept


def _item_key(value: Any) -> str:
    """An item's identifying value as ``ext`` keys it. A number is keyed by its integer value
    when it has one: the model reads a version written ``1.0`` (or ``true``) as 1, and the
    item is looked up by that 1 on export (a fractional version is refused by validation)."""
    if isinstance(value, bool) or (isinstance(value, float) and value.is_integer()):
        value = int(value)
    return str(value)


def merge(known: Mapping[str, Any], ext: Mapping[str, Any], shape: Shape) -> dict[str, Any]:
    """The record as written: known fields first in their order, then the unknown ones
    (sorted, so that every backend writes the same line)."""
    out = dict(known)
    for name in sorted(ext):
        extra = ext[name]
        if name in shape.nested:
            if isinstance(extra, dict) and isinstance(out.get(name), dict):
                out[name] = merge(out[name], extra, shape.nested[name])
        elif name in shape.lists:
            if isinstance(extra, dict) and isinstance(out.get(name), list):
                out[name] = _merge_items(out[name], extra, *shape.lists[name])
        elif name not in shape.names:
            out[name] = canonical(extra)
    return out


def _merge_items(items: list[Any], kept: Mapping[str, Any], shape: Shape, ident: str) -> list[Any]:
    return [
        merge(item, kept.get(_item_key(item.get(ident))) or {}, shape)
        if isinstance(item, dict)
        else item
        for item in items
    ]


def canonical(value: Any) -> Any:
    """A JSON value with every object's keys sorted: unknown values are written the same way
    whichever backend kept them (PostgreSQL's jsonb reorders keys)."""
    if isinstance(value, dict):
        return {k: canonical(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value
