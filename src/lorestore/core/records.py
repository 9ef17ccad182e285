"""The lesson record of DESIGN §3, its immutable versions, and the audit event. Their
timestamps are UTC strings in the one form of core/timestamps.py."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lorestore.core.owner import Owner

Trust = Literal["candidate", "corroborated", "verified", "disputed", "rejected"]
Status = Literal["active", "archived"]
LessonKind = Literal["lesson", "signal", "bus"]
VersionState = Literal["accepted", "proposed", "superseded", "rejected"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(_Record):
    """Provenance: who or what wrote the lesson, and against which revision."""

    agent: str | None = None
    trigger: str | None = None
    session: str | None = None
    author: str | None = None
    author_association: str | None = None
    url: str | None = None
    repo: str | None = None
    branch: str | None = None
    commit: str | None = None
    pr: int | None = None


class Dependency(_Record):
    """A file the lesson relies on, with the git blob hash it had when the lesson was written."""

    path: str
    blob: str


class Review(_Record):
    """The last adjudication by a person."""

    by: str
    at: str
    note: str | None = None


class Lesson(_Record):
    """A lesson as served: the current accepted version of one address."""

    id: str
    scope: str
    key: str
    value: str
    tags: list[str] = Field(default_factory=list)
    kind: LessonKind = "lesson"
    owner: Owner  # {"user": name} or {"org": slug} in JSON, as ever
    trust: Trust = "candidate"
    status: Status = "active"
    version: int
    seen_count: int = 1
    valid_from: str | None = None
    valid_to: str | None = None
    recorded_at: str
    created_at: str
    updated_at: str
    archived_at: str | None = None
    expires_at: str | None = None
    source: Source = Field(default_factory=Source)
    depends_on: list[Dependency] = Field(default_factory=list)
    review: Review | None = None
    ext: dict[str, Any] = Field(default_factory=dict)
    pending_revision: bool = False


class LessonVersion(_Record):
    """One immutable version of a lesson's value; ``recorded_at`` is its record time."""

    lesson_id: str
    version: int
    state: VersionState
    value: str
    value_digest: str
    tags: list[str] = Field(default_factory=list)
    valid_from: str | None = None
    valid_to: str | None = None
    recorded_at: str
    accepted_at: str | None = None
    actor: str
    source: Source = Field(default_factory=Source)


class AuditEvent(_Record):
    """One append-only audit record. Values never appear here, only their digests."""

    id: int
    at: str
    owner: str
    actor: str
    action: str
    scope: str | None = None
    key: str | None = None
    lesson_id: str | None = None
    before_version: int | None = None
    after_version: int | None = None
    before_digest: str | None = None
    after_digest: str | None = None
    reason: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)
    hash: str
