"""LoreKit's request and entry shapes, and the one mapping between its fields and lorestore's.

A LoreKit ``MemoryEntry`` is a lesson seen through LoreKit's names: ``source_agent`` and
``trigger`` are ``source.agent`` and ``source.trigger``, ``origin_*`` are ``source.repo``,
``.branch``, ``.commit`` and ``.pr``, ``host`` is kept as the tag ``host::NAME`` (lorestore has
no host column), ``seen_count`` and ``ttl_days`` are the same. lorestore's own fields (trust,
version, owner, validity window, review...) are absent: LoreKit's clients do not know them.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lorestore.core.errors import LorestoreError
from lorestore.core.records import Lesson, Source
from lorestore.models import WriteParams
from lorestore.operations import BY_NAME

HOST_TAG = "host::"
MAX_LIMIT = 100  # LoreKit's bound on a page


class _Body(BaseModel):
    """A LoreKit request body: unknown fields are refused, not dropped, so that nothing a
    client sent is silently lost."""

    model_config = ConfigDict(extra="forbid")


BodyT = TypeVar("BodyT", bound=_Body)


class MemoryWrite(_Body):
    scope: str
    key: str
    value: str
    tags: list[str] | None = None
    source_agent: str | None = None
    trigger: str | None = None
    kind: Literal["lesson", "bus", "signal"] | None = None
    host: str | None = Field(None, max_length=64)
    ttl_days: int | None = None
    clear_ttl: bool = False
    created_at: str | None = None  # sent by `lorekit migrate`; lorestore keeps its own time
    org: str | None = None
    origin_repo: str | None = None
    origin_branch: str | None = None
    origin_commit: str | None = None
    origin_pr: int | None = Field(None, ge=1)


class MemoryAddress(_Body):
    scope: str
    key: str


class MemoryDelete(MemoryAddress):
    force: bool = False
    org: str | None = None


class MemorySearch(_Body):
    q: str
    scopes: list[str] | None = None
    tags: list[str] | None = None
    limit: int = Field(20, ge=1, le=MAX_LIMIT)
    cursor: str | None = None


class MemoryList(_Body):
    """``GET /memories``'s query (and the MCP ``memory.list`` arguments)."""

    scope: str | None = None
    key: str | None = None
    tags: list[str] | None = None
    kind: list[str] | None = None
    host: list[str] | None = None
    limit: int = Field(50, ge=1, le=MAX_LIMIT)
    cursor: str | None = None
    created_since: str | None = None
    created_until: str | None = None
    key_prefix: str | None = None


class MemoryPurge(_Body):
    retention_days: int = Field(30, ge=1, le=365)


class OrgCreate(_Body):
    slug: str
    name: str


def parse(model: type[BodyT], data: object) -> BodyT:
    """A body validated into ``model``; a refusal names each field, as LoreKit's 400 does."""
    try:
        return model.model_validate(data if data is not None else {})
    except ValidationError as exc:
        details: dict[str, list[str]] = {}
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"]) or "body"
            details.setdefault(field, []).append(err["msg"])
        raise LorestoreError(
            "invalid_argument",
            "Validation failed: " + "; ".join(f"{f}: {', '.join(m)}" for f, m in details.items()),
            hint="LoreKit's fields are described in docs/lorekit.md",
            details={"fields": details},
        ) from None


def write_params(body: MemoryWrite) -> WriteParams:
    """lorestore's write for a LoreKit upsert. LoreKit replaces the tags on every write (an
    omitted list is empty), so this does too; ``host`` travels as the tag ``host::NAME``."""
    if body.org is not None:
        raise LorestoreError(
            "invalid_argument",
            f"lorestore routes a scope to an org by its binding, not by a write's org "
            f"({body.org!r})",
            hint=f"write without --org; an admin binds the scope once: `lorestore org bind "
            f"{body.org} {body.scope}`",
        )
    tags = list(body.tags or [])
    if body.host:
        tags.append(HOST_TAG + body.host)
    source = Source(
        agent=body.source_agent,
        trigger=body.trigger,
        repo=body.origin_repo,
        branch=body.origin_branch,
        commit=body.origin_commit,
        pr=body.origin_pr,
    )
    arguments: dict[str, Any] = {
        "scope": body.scope,
        "key": body.key,
        "value": body.value,
        "tags": tags,
        "kind": body.kind or "lesson",
        "ttl_days": body.ttl_days,
        "clear_ttl": body.clear_ttl,
    }
    if source != Source():
        arguments["source"] = source
    params = BY_NAME["memory_write"].parse(arguments)  # a refusal in lorestore's own words
    assert isinstance(params, WriteParams)
    return params


def host_of(lesson: Lesson) -> str | None:
    return next((t[len(HOST_TAG) :] for t in lesson.tags if t.startswith(HOST_TAG)), None)


def entry(lesson: Lesson) -> dict[str, Any]:
    """The lesson as LoreKit's ``MemoryEntry``."""
    return {
        "id": lesson.id,
        "scope": lesson.scope,
        "key": lesson.key,
        "value": lesson.value,
        "tags": [t for t in lesson.tags if not t.startswith(HOST_TAG)],
        "kind": lesson.kind,
        "host": host_of(lesson),
        "source_agent": lesson.source.agent,
        "trigger": lesson.source.trigger,
        "origin_repo": lesson.source.repo,
        "origin_branch": lesson.source.branch,
        "origin_commit": lesson.source.commit,
        "origin_pr": lesson.source.pr,
        "seen_count": lesson.seen_count,
        "created_at": lesson.created_at,
        "updated_at": lesson.updated_at,
        "expires_at": lesson.expires_at,
        "archived_at": lesson.archived_at,
        "org": lesson.owner.name if lesson.owner.is_org else None,
    }
