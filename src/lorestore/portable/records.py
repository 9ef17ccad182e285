"""The records of the interchange format and the domain records they carry: a lesson (with its
versions), a tombstone, a scope policy, a project's repository, and a record of a type this
lorestore does not know.

``*_line`` turns a stored record into the object written on one line; ``parse_*`` validates
an object read from a line (every domain rule a write would check) into what the importer
stores. Pure: no I/O, no store.
"""

from __future__ import annotations

import functools
import hashlib
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from lorestore.core.errors import LorestoreError
from lorestore.core.jsontext import dumps
from lorestore.core.normalise import value_digest, value_digests
from lorestore.core.owner import Owner
from lorestore.core.records import Lesson, LessonVersion
from lorestore.core.scope import Scope, parse_scope, repository
from lorestore.core.timestamps import normalise_ts
from lorestore.core.validation import (
    CANONICAL_UUID,
    validate_address,
    validate_key,
    validate_tags,
    validate_value,
)
from lorestore.portable.jsonl import PlainRecord
from lorestore.portable.shapes import (
    LESSON,
    POLICY,
    PROJECT,
    TOMBSTONE,
    canonical,
    merge,
    split,
)
from lorestore.storage.protocol import (
    ForeignRecord,
    PolicyRecord,
    PolicyRow,
    ProjectRepo,
    Tombstone,
)

KNOWN_TYPES = ("lesson", "tombstone", "scope_policy", "project")
_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_CANONICAL_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z\Z")
_BLOB = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_NIL_UUID = "00000000-0000-0000-0000-000000000000"
_TIMES = ("valid_from", "valid_to", "recorded_at", "created_at", "updated_at", "archived_at")
_PLACEHOLDER_OWNER = Owner.user("import")  # replaced by the owner the scope resolves to
# PostgreSQL keeps version numbers and seen_count in integer columns: both backends accept
# only what it can hold, so a file that imports into one imports into the other.
INT_MAX = 2**31 - 1


class RecordError(ValueError):
    """A line or file that is not a valid record; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class ParsedLesson:
    lesson: Lesson
    digest: str
    versions: tuple[LessonVersion, ...] | None  # None: the record carried no history
    pending_version: int | None
    derive_id: bool = False  # a LoreKit lesson: its id is derived from owner and address
    dropped_proposal: bool = False  # pending_revision without the versions that hold it
    # Every digest a store may hold for the value (``value_digests``; ``digest`` first),
    # computed once for the tombstone check.
    digests: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ParsedForeign:
    type: str
    scope: str | None
    record: dict[str, Any]
    digest: str


# --- stored record -> line ------------------------------------------------------------------


def version_line(version: LessonVersion) -> dict[str, Any]:
    data = version.model_dump(exclude={"lesson_id"})
    data["source"] = version.source.model_dump(exclude_none=True)
    return data


def lesson_line(lesson: Lesson, versions: list[LessonVersion] | None) -> dict[str, Any]:
    data = lesson.model_dump(exclude={"ext"})
    data["source"] = lesson.source.model_dump(exclude_none=True)
    known: dict[str, Any] = {"type": "lesson", **{k: data[k] for k in LESSON.fields[1:-1]}}
    if versions is not None:
        known["versions"] = [version_line(v) for v in versions]
    if not lesson.ext:
        return PlainRecord(known)  # the lesson's fields alone hold no float
    return merge(known, lesson.ext, LESSON)


def tombstone_line(tombstone: Tombstone) -> dict[str, Any]:
    known = {
        "type": "tombstone",
        "id": tombstone.id,
        "owner": Owner.parse(tombstone.owner).record(),
        "scope": tombstone.scope,
        "digest": tombstone.value_digest,
        "reason": tombstone.reason,
        "actor": tombstone.actor,
        "time": tombstone.created_at,
        "lesson_id": tombstone.lesson_id,
        "lifted_at": tombstone.lifted_at,
        "lifted_by": tombstone.lifted_by,
        "lift_reason": tombstone.lift_reason,
    }
    return merge(known, tombstone.ext, TOMBSTONE)


def policy_line(record: PolicyRecord) -> dict[str, Any]:
    known = {
        "type": "scope_policy",
        "owner": Owner.parse(record.owner).record(),
        "scope": record.policy.scope,
        "revision_policy": record.policy.revision_policy,
        "require_review": record.policy.require_review,
        "updated_at": record.updated_at,
        "updated_by": record.updated_by,
    }
    return merge(known, record.ext, POLICY)


def project_line(record: ProjectRepo) -> dict[str, Any]:
    """One repository of one project (a project of three repositories is three lines)."""
    known = {
        "type": "project",
        "owner": Owner.parse(record.owner).record(),
        "scope": f"project::{record.project}",
        "repo": record.repo,
        "added_at": record.added_at,
        "added_by": record.added_by,
    }
    return merge(known, record.ext, PROJECT)


def foreign_line(record: ForeignRecord) -> dict[str, Any]:
    """A kept record of an unknown type, as imported: its type first, then its fields."""
    data = canonical(record.record)
    return {"type": data.pop("type"), **data}


# --- line -> record -------------------------------------------------------------------------


def _text(known: Mapping[str, Any], name: str, *, required: bool = True) -> str | None:
    value = known.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise RecordError(f"{name} must be a string")
    return value


def _uuid(value: Any, name: str) -> str:
    if isinstance(value, str) and CANONICAL_UUID.match(value) and value != _NIL_UUID:
        return value  # already as str(uuid.UUID(value)) writes it
    if not isinstance(value, str):
        raise RecordError(f"{name} must be a UUID string")
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        raise RecordError(f"{name} {value!r} is not a UUID") from None
    if parsed.int == 0:
        # Exports page on id > the nil UUID: a record holding it could never be exported.
        raise RecordError(f"{name} cannot be the nil UUID")
    return str(parsed)


def _scope(value: Any) -> Scope:
    if not isinstance(value, str):
        raise RecordError("scope must be a string")
    return scope_of(value)


@functools.lru_cache(maxsize=4096)
def scope_of(text: str) -> Scope:
    """``parse_scope``, remembered: a file names few scopes many times."""
    return parse_scope(text)


def _time(known: dict[str, Any], name: str, *, required: bool) -> None:
    value = known.get(name)
    if value is None:
        if required:
            raise RecordError(f"{name} is required")
        return
    if not isinstance(value, str):
        raise RecordError(f"{name} must be an ISO 8601 string")
    if not _CANONICAL_TIME.match(value):
        known[name] = normalise_ts(value, field=name)
        return
    try:  # already in lorestore's form: checked, and kept as it is
        datetime.fromisoformat(value[:-1])
    except ValueError:
        raise RecordError(f"{name} {value!r} is not a valid time") from None


def _validated(model: type[Lesson] | type[LessonVersion], data: dict[str, Any]) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in e['loc']) or 'record'}: {e['msg']}" for e in exc.errors()
        ]
        raise RecordError("; ".join(problems)) from None


def parse_lesson(record: Mapping[str, Any], *, derive_id: bool = False) -> ParsedLesson:
    """Validate a lesson line; raises ``RecordError`` (or a LorestoreError of the domain)."""
    known, ext = split(record, LESSON)
    known.pop("type", None)
    known.pop("owner", None)
    versions_raw = known.pop("versions", None)
    pending_flag = known.pop("pending_revision", False)
    lesson_id = str(uuid.uuid4()) if derive_id else _uuid(known.get("id"), "id")
    known |= {
        "id": lesson_id,
        "scope": _scope(known.get("scope")).text,
        "key": validate_key(_text(known, "key") or ""),
        "value": validate_value(_text(known, "value") or ""),
        "tags": list(validate_tags(_list(known, "tags"))),
        "owner": _PLACEHOLDER_OWNER,
        "ext": ext,
    }
    validate_address(known["scope"], known["key"])
    for name in _TIMES:
        _time(known, name, required=name in ("recorded_at", "created_at", "updated_at"))
    _time(known, "expires_at", required=False)
    _check_window(known.get("valid_from"), known.get("valid_to"))
    if known.get("review") is not None and isinstance(known["review"], dict):
        _time(known["review"], "at", required=True)
    _check_dependencies(known.get("depends_on"))
    if known.get("status") == "archived" and known.get("archived_at") is None:
        # The purge sweep counts an archived lesson's retention from archived_at; a record
        # without it (hand-written, or from a store that let one in) takes its updated_at.
        known["archived_at"] = known.get("updated_at")
    lesson: Lesson = _validated(Lesson, known)
    _check_counts(lesson)
    digests = value_digests(lesson.value)
    digest = digests[0]
    if versions_raw is None:
        return ParsedLesson(
            lesson, digest, None, None, derive_id, bool(pending_flag), digests=digests
        )
    versions = _versions(lesson, digest, versions_raw)
    pending = next((v.version for v in versions if v.state == "proposed"), None)
    if bool(pending_flag) != (pending is not None):
        raise RecordError("pending_revision does not match the proposed version in versions")
    lesson = lesson.model_copy(update={"pending_revision": pending is not None})
    return ParsedLesson(lesson, digest, versions, pending, derive_id, digests=digests)


def _check_counts(lesson: Lesson) -> None:
    if not 1 <= lesson.version <= INT_MAX:
        raise RecordError(f"version must be from 1 to {INT_MAX}")
    if not 0 <= lesson.seen_count <= INT_MAX:
        raise RecordError(f"seen_count must be from 0 to {INT_MAX}")


def _list(known: Mapping[str, Any], name: str) -> list[str]:
    value = known.get(name) or []
    if not isinstance(value, list):
        raise RecordError(f"{name} must be a list")
    return value


def _check_window(valid_from: Any, valid_to: Any) -> None:
    if valid_from and valid_to and valid_to < valid_from:
        raise RecordError("valid_to is before valid_from")


def _check_dependencies(items: Any) -> None:
    if items is None:
        return
    if not isinstance(items, list):
        raise RecordError("depends_on must be a list")
    for item in items:  # every item's types first: a path that is a list cannot be hashed
        if not isinstance(item, dict):
            raise RecordError("each depends_on item must be an object")
        path = item.get("path")
        if not isinstance(path, str) or not path or path.startswith("/") or ".." in path.split("/"):
            raise RecordError(f"depends_on path {path!r} must be relative to the repository")
        if not isinstance(item.get("blob"), str) or not _BLOB.match(item["blob"]):
            raise RecordError(f"depends_on {path!r} has no git blob hash")
    if len({item["path"] for item in items}) != len(items):
        raise RecordError("depends_on lists a path twice")


def _versions(lesson: Lesson, digest: str, raw: Any) -> tuple[LessonVersion, ...]:
    if not isinstance(raw, list) or not raw:
        raise RecordError("versions must be a non-empty list")
    out: list[LessonVersion] = []
    for item in raw:
        if not isinstance(item, dict):
            raise RecordError("each version must be an object")
        data = dict(item, lesson_id=lesson.id)
        data["value"] = validate_value(_text(data, "value") or "")
        data["tags"] = list(validate_tags(_list(data, "tags")))
        for name in ("valid_from", "valid_to", "recorded_at", "accepted_at"):
            _time(data, name, required=name == "recorded_at")
        # A store written before default-ignorable characters left the digest holds the
        # digest with them kept: either is this value's.
        digests = value_digests(data["value"])
        if data.setdefault("value_digest", digests[0]) not in digests:
            raise RecordError(f"version {data.get('version')}: value_digest does not match value")
        out.append(_validated(LessonVersion, data))
    _check_versions(lesson, digest, out)
    return tuple(sorted(out, key=lambda v: v.version))


def _check_versions(lesson: Lesson, digest: str, versions: list[LessonVersion]) -> None:
    numbers = [v.version for v in versions]
    if len(set(numbers)) != len(numbers) or min(numbers) < 1 or max(numbers) > INT_MAX:
        raise RecordError(f"version numbers must be distinct and from 1 to {INT_MAX}")
    served = next((v for v in versions if v.version == lesson.version), None)
    if served is None or served.state != "accepted" or value_digest(served.value) != digest:
        raise RecordError(f"versions lack the served version {lesson.version} as accepted")
    proposed = [v for v in versions if v.state == "proposed"]
    if len(proposed) > 1 or any(v.version < lesson.version for v in proposed):
        raise RecordError("at most one proposed version, newer than the served one")


def parse_tombstone(record: Mapping[str, Any]) -> Tombstone:
    known, ext = split(record, TOMBSTONE)
    digest = known.get("digest")
    if not isinstance(digest, str) or not _DIGEST.match(digest):
        raise RecordError("digest must be the 64 hex digits of a value digest")
    for name in ("time", "lifted_at"):
        _time(known, name, required=name == "time")
    lesson_id = known.get("lesson_id")
    return Tombstone(
        id=_uuid(known.get("id"), "id"),
        owner="",
        scope=_scope(known.get("scope")).text,
        value_digest=digest,
        reason=_text(known, "reason") or "",
        actor=_text(known, "actor") or "",
        created_at=known["time"],
        lesson_id=None if lesson_id is None else _uuid(lesson_id, "lesson_id"),
        lifted_at=known.get("lifted_at"),
        lifted_by=_text(known, "lifted_by", required=False),
        lift_reason=_text(known, "lift_reason", required=False),
        ext=ext,
    )


def parse_policy(record: Mapping[str, Any]) -> PolicyRecord:
    known, ext = split(record, POLICY)
    scope = known.get("scope")
    scope_text = "*" if scope == "*" else _scope(scope).text
    revision = known.get("revision_policy")
    if revision not in ("none", "commit", "files"):
        raise RecordError("revision_policy must be none, commit or files")
    if not isinstance(known.get("require_review"), bool):
        raise RecordError("require_review must be true or false")
    _time(known, "updated_at", required=True)
    return PolicyRecord(
        owner=_owner_key(known.get("owner")),
        policy=PolicyRow(scope_text, str(revision), known["require_review"]),
        updated_at=known["updated_at"],
        updated_by=_text(known, "updated_by") or "",
        ext=ext,
    )


def parse_project(record: Mapping[str, Any]) -> ProjectRepo:
    known, ext = split(record, PROJECT)
    scope = _scope(known.get("scope"))
    if scope.kind != "project" or scope.project is None:
        raise RecordError("a project record's scope is project::NAME")
    repo = known.get("repo")
    if not isinstance(repo, str):
        raise RecordError("repo must be OWNER/NAME")
    _time(known, "added_at", required=True)
    return ProjectRepo(
        owner=_owner_key(known.get("owner")),
        project=scope.project,
        repo=repository(repo),
        added_at=known["added_at"],
        added_by=_text(known, "added_by") or "",
        ext=ext,
    )


def _owner_key(value: Any) -> str:
    """The key of a record's owner, "" for none or one that is not a valid owner (the
    importer then takes the owner the scope resolves to)."""
    try:
        return Owner.of(value).key
    except LorestoreError:
        return ""


def parse_foreign(record: Mapping[str, Any]) -> ParsedForeign:
    scope = record.get("scope")
    try:
        scope_text = parse_scope(scope).text if isinstance(scope, str) else None
    except LorestoreError:
        scope_text = None
    data = stored_form(record)
    digest = hashlib.sha256(dumps(data).encode("utf-8")).hexdigest()
    return ParsedForeign(str(record["type"]), scope_text, data, digest)


def stored_form(value: Any) -> Any:
    """A JSON value with its numbers as PostgreSQL's jsonb keeps them, so that both backends
    store (and hash, and export) a kept record the same. jsonb holds a number as the decimal
    its text spells: it has no ``-0.0``, and a float of 1e16 or more, which Python writes with
    an exponent (``1e+16``), comes back without a fraction, as an integer."""
    if isinstance(value, float):
        if value == 0.0:
            return 0.0
        return int(value) if abs(value) >= 1e16 else value
    if isinstance(value, dict):
        return {k: stored_form(v) for k, v in value.items()}
    if isinstance(value, list):
        return [stored_form(v) for v in value]
    return value
