"""Conversion between stored rows (JSON text columns) and the domain records."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from lorestore.core.records import AuditEvent, Lesson, LessonVersion
from lorestore.storage.protocol import TokenRecord


class RowLike(Protocol):
    """A database row addressable by column name (sqlite3.Row, a psycopg dict row)."""

    def __getitem__(self, key: str, /) -> Any: ...

    def keys(self) -> Any: ...


_EMPTY_OBJECT = "{}"
_EMPTY_LIST = "[]"


def _loads(text: str | None, empty: str) -> Any:
    if text is None:
        return None
    if text == empty:
        return {} if empty == _EMPTY_OBJECT else []
    return json.loads(text)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def owner_text(owner: Mapping[str, str]) -> str:
    ((kind, ident),) = owner.items()
    return f"{kind}:{ident}"


def owner_dict(text: str) -> dict[str, str]:
    kind, _, ident = text.partition(":")
    return {kind: ident}


def lesson_from_row(row: RowLike) -> Lesson:
    return Lesson.model_validate(
        {
            "id": row["id"],
            "scope": row["scope"],
            "key": row["key"],
            "value": row["value"],
            "tags": _loads(row["tags"], _EMPTY_LIST),
            "kind": row["kind"],
            "owner": owner_dict(row["owner"]),
            "trust": row["trust"],
            "status": row["status"],
            "version": row["version"],
            "seen_count": row["seen_count"],
            "valid_from": row["valid_from"],
            "valid_to": row["valid_to"],
            "recorded_at": row["recorded_at"],
            "created_at": row["created_at"],
            "updated_at": row["updated_at"],
            "archived_at": row["archived_at"],
            "expires_at": row["expires_at"],
            "source": _loads(row["source"], _EMPTY_OBJECT),
            "depends_on": _loads(row["depends_on"], _EMPTY_LIST),
            "review": _loads(row["review"], _EMPTY_OBJECT),
            "ext": _loads(row["ext"], _EMPTY_OBJECT),
            "pending_revision": row["pending_version"] is not None,
        }
    )


def lesson_params(lesson: Lesson, value_digest: str, pending_version: int | None) -> dict[str, Any]:
    return {
        "id": lesson.id,
        "owner": owner_text(lesson.owner),
        "scope": lesson.scope,
        "key": lesson.key,
        "value": lesson.value,
        "value_digest": value_digest,
        "tags": dumps(lesson.tags),
        "kind": lesson.kind,
        "trust": lesson.trust,
        "status": lesson.status,
        "version": lesson.version,
        "seen_count": lesson.seen_count,
        "valid_from": lesson.valid_from,
        "valid_to": lesson.valid_to,
        "recorded_at": lesson.recorded_at,
        "created_at": lesson.created_at,
        "updated_at": lesson.updated_at,
        "archived_at": lesson.archived_at,
        "expires_at": lesson.expires_at,
        "source": dumps(lesson.source.model_dump(exclude_none=True)),
        "depends_on": dumps([d.model_dump() for d in lesson.depends_on]),
        "review": dumps(lesson.review.model_dump()) if lesson.review else None,
        "ext": dumps(lesson.ext),
        "pending_version": pending_version,
    }


def version_from_row(row: RowLike, lesson_id: str) -> LessonVersion:
    return LessonVersion.model_validate(
        {
            "lesson_id": lesson_id,
            "version": row["version"],
            "state": row["state"],
            "value": row["value"],
            "value_digest": row["value_digest"],
            "tags": _loads(row["tags"], _EMPTY_LIST),
            "valid_from": row["valid_from"],
            "valid_to": row["valid_to"],
            "recorded_at": row["recorded_at"],
            "accepted_at": row["accepted_at"],
            "actor": row["actor"],
            "source": _loads(row["source"], _EMPTY_OBJECT),
        }
    )


def version_params(pk: int, version: LessonVersion) -> dict[str, Any]:
    return {
        "lesson_pk": pk,
        "version": version.version,
        "state": version.state,
        "value": version.value,
        "value_digest": version.value_digest,
        "tags": dumps(version.tags),
        "valid_from": version.valid_from,
        "valid_to": version.valid_to,
        "recorded_at": version.recorded_at,
        "accepted_at": version.accepted_at,
        "actor": version.actor,
        "source": dumps(version.source.model_dump(exclude_none=True)),
    }


def audit_from_row(row: RowLike) -> AuditEvent:
    # sqlite3.Row iterates values, not names, hence keys().
    data = {name: row[name] for name in row.keys()}  # noqa: SIM118
    data.pop("prev_hash", None)
    data["detail"] = _loads(data["detail"], _EMPTY_OBJECT)
    return AuditEvent.model_validate(data)


def token_from_row(row: RowLike) -> TokenRecord:
    scopes, orgs = row["scopes"], row["orgs"]
    return TokenRecord(
        id=row["id"],
        principal=row["principal"],
        name=row["name"],
        prefix=row["prefix"],
        permission=row["permission"],
        scopes=None if scopes is None else tuple(json.loads(scopes)),
        orgs=None if orgs is None else tuple(json.loads(orgs)),
        created_at=row["created_at"],
        created_by=row["created_by"],
        expires_at=row["expires_at"],
        revoked_at=row["revoked_at"],
        last_used_at=row["last_used_at"],
    )
