"""Conversion between stored rows and the domain records.

Both backends go through here. SQLite hands back JSON as text and times as canonical text,
and so does the PostgreSQL store's pool (postgres/store.py: its loaders), with ids as
``UUID``; each helper also accepts decoded JSON and ``datetime`` (a connection of
``lorestore migrate``'s, which has no such loaders), so the records (and every surface's
output) are identical whichever backend served them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from lorestore.core.audit import CHAINED_FIELDS
from lorestore.core.jsontext import dumps
from lorestore.core.owner import Owner
from lorestore.core.timestamps import format_ts
from lorestore.storage.protocol import (
    ForeignRecord,
    ImportedLesson,
    Invite,
    Membership,
    PolicyRecord,
    PolicyRow,
    TokenRecord,
    Tombstone,
)

if TYPE_CHECKING:
    from lorestore.core.records import AuditEvent, Lesson, LessonVersion


class RowLike(Protocol):
    """A database row addressable by column name (sqlite3.Row, a psycopg dict row)."""

    def __getitem__(self, key: str, /) -> Any: ...

    def keys(self) -> Any: ...


def json_field(value: Any, empty: Any) -> Any:
    """A JSON column's value, ``empty`` (a fresh one) for the usual empty text."""
    if value is None:
        return None
    if not isinstance(value, str):
        return value
    if value in ("{}", "[]"):
        return type(empty)()
    return json.loads(value)


def json_value(value: Any) -> Any:
    """A JSON column's value: decoded by the driver (PostgreSQL) or from text (SQLite)."""
    return json.loads(value) if isinstance(value, str) else value


def ts_text(value: Any) -> str | None:
    """A stored time as canonical text (as both stores return it; a datetime from a
    connection without the PostgreSQL store's loaders)."""
    if value is None or isinstance(value, str):
        return value
    assert isinstance(value, datetime)
    return format_ts(value)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def lesson_from_row(row: RowLike) -> Lesson:
    from lorestore.core.records import Lesson  # at the first record: not in a hook

    return Lesson.model_validate(
        {
            "id": str(row["id"]),
            "scope": row["scope"],
            "key": row["key"],
            "value": row["value"],
            "tags": json_field(row["tags"], []),
            "kind": row["kind"],
            "owner": Owner.parse(row["owner"]),
            "trust": row["trust"],
            "status": row["status"],
            "version": row["version"],
            "seen_count": row["seen_count"],
            "valid_from": ts_text(row["valid_from"]),
            "valid_to": ts_text(row["valid_to"]),
            "recorded_at": ts_text(row["recorded_at"]),
            "created_at": ts_text(row["created_at"]),
            "updated_at": ts_text(row["updated_at"]),
            "archived_at": ts_text(row["archived_at"]),
            "expires_at": ts_text(row["expires_at"]),
            "source": json_field(row["source"], {}),
            "depends_on": json_field(row["depends_on"], []),
            "review": json_field(row["review"], {}),
            "ext": json_field(row["ext"], {}),
            "pending_revision": row["pending_version"] is not None,
        }
    )


# The columns of a lessons row that a write sets, in the order lesson_row gives them.
LESSON_COLUMNS = (
    "id",
    "owner",
    "scope",
    "key",
    "value",
    "value_digest",
    "tags",
    "kind",
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
    "ext",
    "pending_version",
)


def lesson_row(
    lesson: Lesson, value_digest: str, pending_version: int | None, owner: str, lesson_id: str
) -> tuple[Any, ...]:
    """A lessons row's values, in LESSON_COLUMNS order (positional parameters bind faster
    than named ones, which an import binding 2,000 rows a batch notices)."""
    return (
        lesson_id,
        owner,
        lesson.scope,
        lesson.key,
        lesson.value,
        value_digest,
        dumps(lesson.tags),
        lesson.kind,
        lesson.trust,
        lesson.status,
        lesson.version,
        lesson.seen_count,
        lesson.valid_from,
        lesson.valid_to,
        lesson.recorded_at,
        lesson.created_at,
        lesson.updated_at,
        lesson.archived_at,
        lesson.expires_at,
        dumps(lesson.source.model_dump(exclude_none=True)),
        dumps([d.model_dump() for d in lesson.depends_on]),
        dumps(lesson.review.model_dump()) if lesson.review else None,
        dumps(lesson.ext),
        pending_version,
    )


def imported_row(imported: ImportedLesson) -> tuple[Any, ...]:
    """The row of a lesson an import adds, under the owner and id it lands with."""
    return lesson_row(
        imported.lesson, imported.digest, imported.pending_version, imported.owner, imported.id
    )


def lesson_params(lesson: Lesson, value_digest: str, pending_version: int | None) -> dict[str, Any]:
    row = lesson_row(lesson, value_digest, pending_version, lesson.owner.key, lesson.id)
    return dict(zip(LESSON_COLUMNS, row, strict=True))


def version_from_row(row: RowLike, lesson_id: str) -> LessonVersion:
    from lorestore.core.records import LessonVersion  # at the first record: not in a hook

    return LessonVersion.model_validate(
        {
            "lesson_id": lesson_id,
            "version": row["version"],
            "state": row["state"],
            "value": row["value"],
            "value_digest": row["value_digest"],
            "tags": json_field(row["tags"], []),
            "valid_from": ts_text(row["valid_from"]),
            "valid_to": ts_text(row["valid_to"]),
            "recorded_at": ts_text(row["recorded_at"]),
            "accepted_at": ts_text(row["accepted_at"]),
            "actor": row["actor"],
            "source": json_field(row["source"], {}),
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


# The columns an audit event is appended with.
AUDIT_COLUMNS = (*CHAINED_FIELDS, "prev_hash", "hash")


def audit_params(event: Mapping[str, Any]) -> dict[str, Any]:
    """A chained audit event's row by column name, its detail as JSON text."""
    params = {name: event.get(name) for name in AUDIT_COLUMNS}
    params["detail"] = dumps(event.get("detail") or {})
    return params


def audit_dict(row: RowLike) -> dict[str, Any]:
    """An audit row as stored, with times and ids in canonical text (for hash checks)."""
    # sqlite3.Row iterates values, not names, hence keys().
    data = {name: row[name] for name in row.keys()}  # noqa: SIM118
    data["at"] = ts_text(data["at"])
    data["lesson_id"] = _text(data["lesson_id"])
    data["detail"] = json_field(data["detail"], {})
    return data


def audit_from_row(row: RowLike) -> AuditEvent:
    from lorestore.core.records import AuditEvent  # at the first record: not in a hook

    data = audit_dict(row)
    data.pop("prev_hash", None)
    return AuditEvent.model_validate(data)


def token_from_row(row: RowLike) -> TokenRecord:
    scopes, orgs = json_field(row["scopes"], []), json_field(row["orgs"], [])
    return TokenRecord(
        id=str(row["id"]),
        principal=row["principal"],
        name=row["name"],
        prefix=row["prefix"],
        permission=row["permission"],
        scopes=None if scopes is None else tuple(scopes),
        orgs=None if orgs is None else tuple(orgs),
        created_at=ts_text(row["created_at"]) or "",
        created_by=row["created_by"],
        expires_at=ts_text(row["expires_at"]),
        revoked_at=ts_text(row["revoked_at"]),
        last_used_at=ts_text(row["last_used_at"]),
    )


# Parameters of the inserts both backends share (each backend's SQL casts what it must).


def policy_record_params(policy: PolicyRecord) -> dict[str, Any]:
    return {
        "owner": policy.owner,
        "scope": policy.policy.scope,
        "revision_policy": policy.policy.revision_policy,
        "require_review": int(policy.policy.require_review),
        "updated_at": policy.updated_at,
        "updated_by": policy.updated_by,
        "ext": dumps(policy.ext),
    }


def foreign_params(record: ForeignRecord) -> dict[str, Any]:
    return {
        "owner": record.owner,
        "digest": record.digest,
        "type": record.type,
        "scope": record.scope,
        "record": dumps(record.record),
        "imported_at": record.imported_at,
        "imported_by": record.imported_by,
    }


def tombstone_params(tombstone: Tombstone) -> dict[str, Any]:
    return {
        "id": tombstone.id,
        "owner": tombstone.owner,
        "scope": tombstone.scope,
        "value_digest": tombstone.value_digest,
        "reason": tombstone.reason,
        "actor": tombstone.actor,
        "created_at": tombstone.created_at,
        "lesson_id": tombstone.lesson_id,
        "lifted_at": tombstone.lifted_at,
        "lifted_by": tombstone.lifted_by,
        "lift_reason": tombstone.lift_reason,
        "ext": dumps(tombstone.ext),
    }


def tombstone_from_row(row: RowLike) -> Tombstone:
    return Tombstone(
        id=str(row["id"]),
        owner=row["owner"],
        scope=row["scope"],
        value_digest=row["value_digest"],
        reason=row["reason"],
        actor=row["actor"],
        created_at=ts_text(row["created_at"]) or "",
        lesson_id=_text(row["lesson_id"]),
        lifted_at=ts_text(row["lifted_at"]),
        lifted_by=row["lifted_by"],
        lift_reason=row["lift_reason"],
        ext=json_value(row["ext"]) or {},
    )


def token_params(token: TokenRecord, token_hash: str) -> dict[str, Any]:
    return {
        "id": token.id,
        "principal": token.principal,
        "name": token.name,
        "token_hash": token_hash,
        "prefix": token.prefix,
        "permission": token.permission,
        "scopes": None if token.scopes is None else dumps(list(token.scopes)),
        "orgs": None if token.orgs is None else dumps(list(token.orgs)),
        "created_at": token.created_at,
        "created_by": token.created_by,
        "expires_at": token.expires_at,
    }


def invite_params(invite: Invite, code_hash: str) -> dict[str, Any]:
    return {
        "id": invite.id,
        "org": invite.org,
        "invitee": invite.invitee,
        "role": invite.role,
        "code_hash": code_hash,
        "created_by": invite.created_by,
        "created_at": invite.created_at,
        "expires_at": invite.expires_at,
    }


def invite_from_row(row: RowLike) -> Invite:
    return Invite(
        id=str(row["id"]),
        org=row["org"],
        invitee=row["invitee"],
        role=row["role"],
        created_by=row["created_by"],
        created_at=ts_text(row["created_at"]) or "",
        expires_at=ts_text(row["expires_at"]) or "",
        accepted_at=ts_text(row["accepted_at"]),
        revoked_at=ts_text(row["revoked_at"]),
        revoked_by=row["revoked_by"],
    )


def membership_from_row(row: RowLike) -> Membership:
    return Membership(row["org"], row["member"], row["role"], ts_text(row["created_at"]) or "")


def policy_params(owner: str, policy: PolicyRow, *, by: str, at: str) -> dict[str, Any]:
    return {
        "owner": owner,
        "scope": policy.scope,
        "revision_policy": policy.revision_policy,
        "require_review": int(policy.require_review),
        "by": by,
        "at": at,
    }
