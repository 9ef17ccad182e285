"""Arguments and results of every operation: the one schema MCP, REST and the CLI share.

Fields carry only types and defaults here; the domain rules (scope grammar, size limits)
are checked by the service so that every surface reports them with the same error code.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any, Literal, Self, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lorestore.core.errors import LorestoreError
from lorestore.core.records import (
    AuditEvent,
    Lesson,
    LessonKind,
    LessonVersion,
    Source,
)
from lorestore.core.validation import unstorable

# The code a refused argument gets, by field, so that a NUL in a key or a `true` for ttl_days
# is reported as validate_key and validate_ttl report their own refusals.
FIELD_CODES = {
    "key": "invalid_key",
    "value": "invalid_value",
    "scope": "invalid_scope",
    "scopes": "invalid_scope",
    "tags": "invalid_tags",
    "ttl_days": "invalid_ttl",
}


def _strings(value: object, where: str) -> Iterator[tuple[str, str]]:
    """Every string in an argument, nested ones and mapping keys included, with its path."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _strings(getattr(value, name), f"{where}.{name}")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key, where)
            yield from _strings(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _strings(item, f"{where}[{index}]")


def _takes_int(annotation: object) -> bool:
    options = get_args(annotation) or (annotation,)
    return int in options and bool not in options


@functools.cache
def _whole_number_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields of a Params model that take a whole number, found once per model (the
    check runs on every call of every operation)."""
    return tuple(n for n, f in model.model_fields.items() if _takes_int(f.annotation))


_SCALARS = (int, float, bool)


class Params(BaseModel):
    """The arguments of an operation. Two refusals hold for every operation, before the
    service sees its arguments: no string may hold a NUL character (PostgreSQL cannot store
    one, SQLite can: refusing it everywhere keeps the backends alike), and no whole-number
    argument may be a boolean (pydantic's lax mode would read ``true`` as 1). Numeric strings
    stay accepted, because REST query parameters arrive as text."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _refuse_booleans_for_numbers(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name in _whole_number_fields(cls):
                if isinstance(data.get(name), bool):
                    raise LorestoreError(
                        FIELD_CODES.get(name, "invalid_argument"),
                        f"{name} must be a whole number, not {str(data[name]).lower()}",
                        hint=f"pass a whole number such as 30, or omit {name}",
                    )
        return data

    @model_validator(mode="after")
    def _refuse_nul(self) -> Self:
        for name, value in self.__dict__.items():
            if value is None or type(value) in _SCALARS:
                continue
            if type(value) is str and value.isascii() and "\x00" not in value:
                continue  # the common case, without walking
            for where, text in _strings(value, name):
                why = unstorable(text)
                if why is not None:
                    raise LorestoreError(
                        FIELD_CODES.get(name, "invalid_argument"),
                        f"{where} {why}",
                        hint="lorestore stores text: remove the NUL characters or the broken "
                        "characters (a command line in another encoding makes them)",
                        details={"field": where},
                    )
        return self


class DependencyRef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    blob: str | None = Field(None, description="git blob hash of the file when the lesson held")


class Result(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    def found_fault(self) -> bool:
        """Whether the answer reports a fault (a check that failed): the CLI then exits 1
        after printing it, as any operation that could not do all it was asked does."""
        return False


class Address(Params):
    scope: str = Field(
        description="global, project::NAME, repo::OWNER/NAME or branch::OWNER/NAME::BRANCH"
    )
    key: str = Field(description="the lesson's name within its scope (1-512 characters)")


class WriteParams(Address):
    value: str = Field(description="the lesson text, markdown, 1 B - 64 KiB")
    tags: list[str] | None = Field(None, description="labels; omitted on an update keeps the old")
    kind: LessonKind = Field("lesson", description="lesson, signal or bus")
    ttl_days: int | None = Field(
        None,
        description="expire after this many days (1-365); "
        "omitted on an update keeps the old expiry",
    )
    clear_ttl: bool = Field(False, description="remove an existing expiry")
    if_version: int | None = Field(
        None,
        description="refuse with version_conflict unless the "
        "lesson is at this version (0: only if it does not exist)",
    )
    valid_from: str | None = Field(None, description="when the lesson starts to hold (ISO 8601)")
    valid_to: str | None = Field(None, description="when it stops holding (ISO 8601)")
    session: str | None = Field(None, description="the writing session's id, for recurrence")
    source: Source | None = Field(None, description="provenance: agent, repo, branch, commit...")
    depends_on: list[DependencyRef] | None = Field(
        None,
        description="files the lesson relies on; the CLI and stdio server fill each blob "
        "from git when only the path is given",
    )


class WriteResult(Result):
    result: Literal["created", "updated", "seen", "proposed"] = Field(
        description="created: new address; updated: new version; seen: same value again; "
        "proposed: a new value for a verified lesson, awaiting review"
    )
    lesson: Lesson = Field(description="the lesson as now served")
    held: list[str] = Field(
        default_factory=list,
        description="why the write is held for review (trust disputed, not recalled): "
        "confusable_key:<key> (the key looks like another key of the scope), "
        "near_rejected:<key> (the value is near a rejected lesson's)",
    )


class ReadParams(Address):
    as_of: str | None = Field(None, description="what the store said at this record time")
    valid_at: str | None = Field(None, description="the version that held at this world time")


class LessonResult(Result):
    lesson: Lesson


class HistoryResult(Result):
    lesson_id: str
    scope: str
    key: str
    status: str
    trust: str
    versions: list[LessonVersion]


class ListParams(Params):
    scope: str = Field(
        description="the scope to list, or every scope beginning with a prefix: end it in * "
        "(repo::acme/*)"
    )
    tags: list[str] | None = Field(None, description="only lessons carrying all of these tags")
    trust: Literal["candidate", "corroborated", "verified", "disputed"] | None = Field(
        None, description="only lessons of this trust"
    )
    state: Literal["active", "archived", "expired"] = Field(
        "active", description="active (served) lessons, or archived or expired ones (a reviewer's)"
    )
    sort: Literal["updated", "seen"] = Field(
        "updated", description="updated: newest first; seen: most sessions first"
    )
    limit: int = Field(50, description="page size, 1-200")
    cursor: str | None = Field(None, description="next_cursor of the previous page")


class ListResult(Result):
    lessons: list[Lesson]
    next_cursor: str | None = None


class SearchParams(Params):
    query: str = Field(description="words to look for in keys, values and tags")
    scopes: list[str] | None = Field(
        None,
        description="the scopes to search; without them, the ladder of the context (repo, "
        "branch, project); one or the other is needed",
    )
    tags: list[str] | None = Field(None, description="only lessons carrying all of these tags")
    limit: int = Field(10, description="at most this many hits, 1-100")
    repo: str | None = Field(
        None,
        description="context, as recall's: owner/name; the CLI and stdio server read it from git",
    )
    branch: str | None = Field(None, description="context: the current branch")
    revision: str | None = Field(None, description="context: the commit being worked on (HEAD)")
    project: str | None = Field(
        None, description="context: a project name (those declared to hold repo apply too)"
    )
    cwd: str | None = Field(
        None, description="context: working directory, to hash depends_on files"
    )
    blobs: dict[str, str | None] | None = Field(
        None, description="context: path -> git blob hash of files as they are now"
    )
    include_held: bool = Field(
        False,
        description="an agent's search withholds what recall would (disputed, unreviewed, "
        "shadowed, revision-held); true shows those too, with their reasons",
    )


class SearchHitOut(Result):
    lesson: Lesson
    score: float = Field(
        description="relevance, higher is better: BM25 (ts_rank_cd on PostgreSQL), fused with "
        "the similarity to the query when the semantic extra is on"
    )
    snippet: str
    label: str = Field("unverified", description="verified, corroborated, unverified, disputed")
    held: list[str] = Field(
        default_factory=list,
        description="why recall would hold it back (disputed, unreviewed, shadowed_by:<scope>, "
        "revision_mismatch, ...); empty when it would be offered",
    )


class SearchResult(Result):
    hits: list[SearchHitOut]
    scopes: list[str] = Field(default_factory=list, description="the scopes searched")
    projects: list[str] = Field(
        default_factory=list, description="the project rungs of the context that applied"
    )
    withheld: int = Field(
        0, description="hits an agent's search left out as recall would (include_held shows them)"
    )
    text: str = Field("", description="the hits served, fenced as reference data")


class NoParams(Params):
    pass


class ScopeInventory(Result):
    owner: str = Field(description="'user:<id>' or 'org:<slug>'")
    scope: str
    active: int
    archived: int
    expired: int
    rejected: int
    trust: dict[str, int] = Field(
        default_factory=dict,
        description="the active lessons by trust: candidate, corroborated, verified, disputed",
    )


class ScopesResult(Result):
    scopes: list[ScopeInventory]


class AuditParams(Params):
    scope: str | None = None
    key: str | None = None
    since: str | None = Field(None, description="events at or after this time")
    until: str | None = Field(None, description="events before this time")
    limit: int = Field(50, description="page size, 1-500")
    cursor: str | None = None


class AuditResult(Result):
    events: list[AuditEvent]
    next_cursor: str | None = None


class ChangeParams(Address):
    reason: str | None = Field(None, description="why; kept in the audit log")


class DeleteParams(Address):
    reason: str | None = Field(None, description="why; kept in the audit log")


class DeleteResult(Result):
    deleted: bool
    lesson_id: str
    scope: str
    key: str
    versions_erased: int


class PurgeParams(Params):
    retention_days: int = Field(30, description="purge lessons archived longer than this")


class PurgeResult(Result):
    purged: int
    lesson_ids: list[str]


class VerifyParams(Address):
    note: str | None = Field(None, description="what the reviewer checked; kept in the audit")
    revision: bool = Field(False, description="accept the pending proposed revision")


class RejectParams(Address):
    reason: str = Field(description="why the value is wrong; shown to whoever writes it again")
    revision: bool = Field(
        False,
        description="reject the pending proposed revision instead (with undo: lift the "
        "rejections of values the lesson no longer serves: rejected revisions, or its value "
        "before a correction)",
    )
    undo: bool = Field(False, description="lift this lesson's rejection (a reviewer's call)")


class DisputeParams(Address):
    reason: str = Field(description="why the lesson may be wrong")


class ReviewQueueParams(Params):
    scope: str | None = Field(None, description="only this scope")
    limit: int = Field(50, description="at most this many items, 1-200")


class ReviewItem(Result):
    reason: Literal["disputed", "revision", "corroborated", "recurring", "outside_author"]
    lesson: Lesson
    proposed: LessonVersion | None = None


class ReviewQueueResult(Result):
    items: list[ReviewItem]


class TokenCreateParams(Params):
    name: str = Field(description="what the token is for, e.g. ci or claude-laptop")
    permission: Literal["read", "write", "review", "admin"] = Field(
        "write", description="read < write < review < admin; agents get write, people review"
    )
    scopes: list[str] | None = Field(
        None, description="confine the token to these scope patterns, e.g. repo::acme/*"
    )
    orgs: list[str] | None = Field(None, description="confine the token to these orgs")
    expires_days: int | None = Field(None, description="expire after this many days (1-3650)")
    lorekit: bool = Field(
        False,
        description="in LoreKit's form (lk_rw_ for write, lk_ro_ for read), for LoreKit's CLI, "
        "hooks and .mcp.json files at /lorekit/functions/v1/",
    )


class TokenInfo(Result):
    id: str
    name: str
    principal: str
    prefix: str = Field(description="the token's first characters, to recognise it")
    permission: str
    scopes: list[str] | None
    orgs: list[str] | None
    created_at: str
    expires_at: str | None
    revoked_at: str | None
    last_used_at: str | None


class TokenCreateResult(Result):
    token: str = Field(description="the secret, shown this once; only its hash is stored")
    info: TokenInfo


class TokenListResult(Result):
    tokens: list[TokenInfo]


class TokenCurrentResult(Result):
    principal: str = Field(description="who acts: 'user:<id>'")
    permission: str = Field(description="the highest permission held: read, write, review, admin")
    is_person: bool = Field(
        description="whether this is a person's credential (review or admin), not an agent's"
    )
    token: TokenInfo | None = Field(
        description="the token of this call; none on the local store, which needs no token"
    )


class TokenRevokeParams(Params):
    id: str = Field(description="the token's id (from token list)")


OrgRole = Literal["owner", "admin", "member", "viewer"]


class OrgCreateParams(Params):
    slug: str = Field(description="the org's id: lower-case letters, digits, '.', '_', '-'")
    name: str | None = Field(None, description="display name (default: the slug)")


class OrgInfo(Result):
    org: str = Field(description="'org:<slug>'")
    role: str = Field(description="your role in it")


class OrgListResult(Result):
    orgs: list[OrgInfo]


class OrgParams(Params):
    org: str = Field(description="the org's slug")


class MemberInfo(Result):
    member: str
    role: str
    since: str


class OrgMembersResult(Result):
    org: str
    members: list[MemberInfo]


class OrgInviteParams(Params):
    org: str = Field(description="the org's slug")
    user: str = Field(description="who may accept: a user name")
    role: OrgRole = Field("member", description="owner, admin, member or viewer (reads only)")
    expires_days: int = Field(7, description="the code stops working after this many days")


class OrgInviteResult(Result):
    id: str = Field(description="the invite's id (org_invite_revoke takes it back)")
    code: str = Field(description="the one-time code, shown once; give it to the invitee")
    org: str
    invitee: str
    role: str
    expires_at: str


class OrgInviteRevokeParams(Params):
    org: str = Field(description="the org's slug")
    id: str = Field(description="the invite's id, as `lorestore org invites` lists it")


InviteState = Literal["pending", "accepted", "revoked", "void", "expired"]


class InviteInfo(Result):
    id: str
    org: str
    invitee: str
    role: str
    created_by: str
    created_at: str
    expires_at: str
    state: InviteState = Field(
        description="pending (its code works), accepted, revoked (taken back by an admin), "
        "void (its creator left the org or lost the role to issue it) or expired"
    )
    accepted_at: str | None = None
    revoked_at: str | None = None
    revoked_by: str | None = None


class OrgInvitesResult(Result):
    org: str
    invites: list[InviteInfo]


class OrgAcceptParams(Params):
    code: str = Field(description="the invite code you were given")


class OrgMemberParams(Params):
    org: str = Field(description="the org's slug")
    user: str = Field(description="the member's user name")


class OrgBindParams(Params):
    org: str = Field(description="the org's slug")
    pattern: str = Field(description="a scope or pattern, e.g. repo::acme/* or project::billing")


class BindingInfo(Result):
    pattern: str = Field(description="a scope or pattern the org holds, e.g. repo::acme/*")
    pending: bool = Field(
        False, description="waits for an operator's approval and routes nothing until then"
    )


class OrgBindingsResult(Result):
    org: str
    bindings: list[BindingInfo]


class OrgBindingResult(Result):
    org: str
    pattern: str
    bound: bool = Field(description="the binding routes its scopes now (false: unbound or pending)")
    pending: bool = Field(
        False,
        description="the binding waits for an operator's approval (lorestore db "
        "approve-binding) and routes nothing until then",
    )
    hint: str | None = Field(None, description="what happens next, for a pending binding")
    own_lessons_routed: int = Field(
        0,
        description="your own lessons at scopes the pattern covers: bound, reads and writes "
        "of those scopes go to the org, so these are out of your reach until it is unbound",
    )


class ProjectParams(Params):
    name: str = Field(description="the project's name: the NAME of project::NAME")


class ProjectAddParams(ProjectParams):
    repos: list[str] = Field(description="repositories, OWNER/NAME, that belong to the project")


class ProjectRemoveParams(ProjectParams):
    repos: list[str] | None = Field(
        None, description="repositories to take out (none named: the whole project)"
    )


class ProjectInfo(Result):
    name: str
    scope: str = Field(description="project::NAME, the rung its lessons live at")
    owner: str = Field(description="'user:<id>' or 'org:<slug>': who declared it")
    repos: list[str] = Field(description="its repositories, OWNER/NAME, sorted")


class ProjectChangeResult(ProjectInfo):
    changed: list[str] = Field(description="the repositories this call added or removed")


class ProjectListResult(Result):
    projects: list[ProjectInfo] = Field(description="by owner, then name")


class ChainReport(Result):
    owner: str
    events: int
    ok: bool
    first_break: int | None = Field(None, description="id of the first event that does not follow")
    head_events: int | None = Field(
        None,
        description="events the chain's head counts (kept where only an append moves it); "
        "more than `events`: events were deleted",
    )
    faults: list[Literal["broken", "truncated", "head_mismatch"]] = Field(
        default_factory=list,
        description="broken: an event does not follow; truncated: the head counts more events "
        "than are stored; head_mismatch: the head is not on the chain; empty: intact",
    )


class AuditVerifyResult(Result):
    ok: bool
    chains: list[ChainReport]

    def found_fault(self) -> bool:
        return not self.ok


class RecallParams(Params):
    repo: str | None = Field(
        None, description="owner/name; the CLI and stdio server read it from git"
    )
    branch: str | None = Field(None, description="the current branch")
    revision: str | None = Field(None, description="the commit being worked on (HEAD)")
    project: str | None = Field(
        None,
        description="a project name, for project:: lessons; the projects declared to hold "
        "the repository (lorestore project add) apply too",
    )
    cwd: str | None = Field(None, description="working directory, to hash depends_on files")
    task: str | None = Field(None, description="what the agent is about to do")
    budget: int = Field(2000, description="most tokens of lessons to return (100-20000)")
    blobs: dict[str, str | None] | None = Field(
        None, description="path -> git blob hash of files as they are now (remote clients)"
    )


class RecallContext(Result):
    repo: str | None
    branch: str | None
    revision: str | None
    project: str | None
    projects: list[str] = Field(
        default_factory=list,
        description="the project rungs that applied: the one named, then those declared to "
        "hold the repository, by name",
    )
    task: str | None
    budget: int
    ladder: list[str]
    at: str
    retrieval: str | None = Field(
        default=None,
        description="how candidates were found: hybrid:<model> (full-text and embedding "
        "similarity fused) or lexical: <why> (the semantic extra missing or switched off)",
    )


class OfferedLesson(Result):
    lesson: Lesson
    label: str = Field(description="verified, corroborated or unverified")
    tokens: int
    reasons: list[str] = Field(description="why it qualified")


class HeldLesson(Result):
    lesson_id: str
    scope: str
    key: str
    version: int
    trust: str
    reasons: list[str] = Field(
        description="expired, not_yet_valid, no_longer_valid, disputed, rejected, unreviewed, "
        "revision_mismatch, file_changed:<path>, file_unknown:<path>, no_dependencies, "
        "shadowed_by:<scope>, duplicate_of:<address>, over_budget, outside_author (a GitHub "
        "capture of an outside author's comment, until a person verifies it)"
    )


class RecallResult(Result):
    recall_id: str
    context: RecallContext
    offered: list[OfferedLesson]
    held: list[HeldLesson]
    not_considered: list[str] = Field(
        default_factory=list,
        description="rungs holding more lessons than recall weighed (per rung, the best "
        "matches for the task, the newest and the newest trusted); search them for more",
    )
    tokens_used: int
    text: str = Field(description="the fenced block to put in an agent's context")


class ExplainParams(Params):
    recall_id: str = Field(description="the recall_id a recall returned")


class ExplainedLesson(Result):
    lesson_id: str
    scope: str
    key: str
    version: int
    reasons: list[str]


class ExplainResult(Result):
    recall_id: str
    at: str
    actor: str
    context: dict[str, Any]
    offered: list[ExplainedLesson]
    held: list[ExplainedLesson]


class ActivityParams(Params):
    days: int = Field(14, description="days back, today included (1-90)")


class DayActivity(Result):
    day: str = Field(description="YYYY-MM-DD (UTC)")
    writes: int = Field(description="write calls: created, updated, proposed, seen again")
    reviews: int = Field(description="verifications and rejections, revisions included")
    recalls: int
    held: int = Field(description="lessons the day's recalls held back")


class ActivityResult(Result):
    days: list[DayActivity] = Field(description="one per day, oldest first")


class RecallsParams(Params):
    since: str | None = Field(
        None, description="recalls at or after this time (default: a day ago)"
    )
    lesson_id: str | None = Field(
        None,
        description="only recalls that offered or held this lesson, each with only its entries "
        "for that lesson (memory_explain gives a whole recall)",
    )
    limit: int = Field(50, description="at most this many, newest first, 1-1000")


class RecallsResult(Result):
    recalls: list[ExplainResult]
    more: bool = Field(description="more recalls than the limit fall in the window")


class PolicyParams(Params):
    scope: str = Field(description="a scope, or * for the default of all your scopes")
    revision_policy: Literal["none", "commit", "files"] | None = Field(
        None,
        description="set: none, commit (same commit as recorded) or files (depends_on "
        "blobs unchanged; a lesson without depends_on is held no_dependencies)",
    )
    require_review: bool | None = Field(None, description="set: offer only verified lessons")


class PolicyResult(Result):
    owner: str
    scope: str
    revision_policy: str
    require_review: bool
    inherited_from: str | None = Field(None, description="* when the owner default applies")
