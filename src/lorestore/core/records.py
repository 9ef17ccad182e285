"""The lesson record of DESIGN §3, its immutable versions, and the audit event.

Timestamps are UTC strings in one fixed-width form (``2026-11-30T05:33:23.123456Z``) so they
sort as text in every backend and print identically on every surface.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lorestore.core.errors import LorestoreError
from lorestore.core.owner import Owner

Trust = Literal["candidate", "corroborated", "verified", "disputed", "rejected"]
Status = Literal["active", "archived"]
LessonKind = Literal["lesson", "signal", "bus"]
VersionState = Literal["accepted", "proposed", "superseded", "rejected"]


def format_ts(moment: datetime, *, field: str = "time") -> str:
    """The canonical text of an aware datetime, in UTC: ``2026-11-30T12:00:00.000000Z``.
    ``isoformat`` pads the year to four digits (``strftime("%Y")`` writes year 1 as ``1``,
    which is not ISO 8601 and sorts after 2026) and is twice as fast."""
    try:
        utc = moment.astimezone(UTC)
    except OverflowError as exc:
        raise _out_of_range(field, moment.isoformat()) from exc
    return utc.isoformat(timespec="microseconds")[:-6] + "Z"


def parse_ts(text: str, *, field: str = "time") -> datetime:
    """Parse ISO 8601 (``Z`` or an offset; a date alone means midnight UTC), as UTC."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except (ValueError, AttributeError) as exc:
        raise LorestoreError(
            "invalid_time",
            f"{field} {text!r} is not an ISO 8601 time",
            hint="use e.g. 2026-11-30T12:00:00Z or 2026-11-30",
        ) from exc
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError as exc:
        # 0001-01-01T00:00+01:00 is in year 0 in UTC, 9999-12-31T23:30-01:00 in year 10000.
        raise _out_of_range(field, text) from exc


def _out_of_range(field: str, text: str) -> LorestoreError:
    return LorestoreError(
        "invalid_time",
        f"{field} {text!r} is outside the years 1 to 9999 in UTC",
        hint="give a time between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z",
    )


def normalise_ts(text: str | None, *, field: str = "time") -> str | None:
    return None if text is None else format_ts(parse_ts(text, field=field))


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
