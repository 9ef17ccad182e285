"""The operation catalog: one declaration per operation, from which the CLI commands and MCP
tools (and, with the HTTP server, REST routes) are generated.

Each entry names the service method, its argument and result models, the surfaces that
carry it, and how the CLI spells it. Surfaces never hand-write an operation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import ValidationError

from lorestore.auth.actor import Actor, Permission
from lorestore.core.errors import LorestoreError
from lorestore.ingest.models import (
    WebhookInfo,
    WebhookListResult,
    WebhookSecretResult,
    WebhookStatsParams,
    WebhookStatsResult,
    WebhookTargetParams,
)
from lorestore.models import (
    FIELD_CODES,
    ActivityParams,
    ActivityResult,
    Address,
    AuditParams,
    AuditResult,
    AuditVerifyResult,
    ChangeParams,
    DeleteParams,
    DeleteResult,
    DisputeParams,
    ExplainParams,
    ExplainResult,
    HistoryResult,
    InviteInfo,
    LessonResult,
    ListParams,
    ListResult,
    NoParams,
    OrgAcceptParams,
    OrgBindingResult,
    OrgBindingsResult,
    OrgBindParams,
    OrgCreateParams,
    OrgInfo,
    OrgInviteParams,
    OrgInviteResult,
    OrgInviteRevokeParams,
    OrgInvitesResult,
    OrgListResult,
    OrgMemberParams,
    OrgMembersResult,
    OrgParams,
    Params,
    PolicyParams,
    PolicyResult,
    ProjectAddParams,
    ProjectChangeResult,
    ProjectListResult,
    ProjectRemoveParams,
    PurgeParams,
    PurgeResult,
    ReadParams,
    RecallParams,
    RecallResult,
    RecallsParams,
    RecallsResult,
    RejectParams,
    Result,
    ReviewQueueParams,
    ReviewQueueResult,
    ScopesResult,
    SearchParams,
    SearchResult,
    TokenCreateParams,
    TokenCreateResult,
    TokenCurrentResult,
    TokenInfo,
    TokenListResult,
    TokenRevokeParams,
    VerifyParams,
    WriteParams,
    WriteResult,
)
from lorestore.portable.models import ExportParams, ExportSummary, ImportParams, ImportResult

if TYPE_CHECKING:  # the catalog is read by --help; the service is imported where it runs
    from lorestore.service import LessonService

Surface = Literal["mcp", "rest", "cli"]
CLI_GROUPS = {
    "token": "Create, list and revoke bearer tokens for the HTTP surfaces.",
    "org": "Organisations: members, invites and the scopes they own.",
    "audit": "The append-only audit log: list it, or verify its hash chains.",
    "project": "Projects: which repositories form each one (recall derives the project rung).",
    "webhook": "GitHub webhooks: review comments on pull requests captured as lessons.",
}
ALL_SURFACES: frozenset[Surface] = frozenset({"mcp", "rest", "cli"})
# Minting and revoking credentials is for people, not for the agents MCP serves.
ADMIN_SURFACES: frozenset[Surface] = frozenset({"rest", "cli"})
# Bulk data moves over REST and the CLI; an MCP tool call is no place for a million records.
BULK_SURFACES: frozenset[Surface] = frozenset({"rest", "cli"})


@dataclass(frozen=True, slots=True)
class Operation:
    name: str
    summary: str
    params: type[Params]
    result: type[Result]
    cli_args: tuple[str, ...] = ()
    mutates: bool = False
    surfaces: frozenset[Surface] = ALL_SURFACES
    # The least permission that may call it at all (the service authorises every call, some
    # further by what they touch): MCP lists a caller only the tools it may call.
    permission: Permission = "read"
    # Moves a stream of records rather than one request and one result: the CLI and REST
    # generators skip it, and hand-written adapters (cli/portable.py, cli/importing.py,
    # transports/http/streaming.py) carry it. Never on MCP (DESIGN §6).
    streaming: bool = False
    # Takes seconds at scale (its work grows with the whole store, not one answer): a server
    # runs it on its long calls' threads, never on a short request's turn (transports/threads.py).
    long_running: bool = False

    @property
    def destructive(self) -> bool:
        """Erases content for good (MCP's destructive hint)."""
        return self.name in ("memory_delete", "memory_purge", "memory_purge_expired")

    @property
    def cli_group(self) -> str | None:
        """Administration commands are grouped: ``token_create`` is ``lorestore token create``."""
        prefix = self.name.split("_", 1)[0]
        return prefix if prefix in CLI_GROUPS else None

    @property
    def cli_name(self) -> str:
        name = self.name.split("_", 1)[1] if self.cli_group else self.name
        return name.removeprefix("memory_").replace("_", "-")

    def parse(self, arguments: dict[str, object] | None) -> Params:
        """Validate raw arguments (from JSON or the command line) into the params model."""
        try:
            return self.params.model_validate(arguments or {})
        except ValidationError as exc:
            raise invalid_arguments(self.name, exc) from None

    def invoke(self, service: LessonService, actor: Actor, params: Params) -> Result:
        result: Result = getattr(service, self.name)(actor, params)
        return result


def _command_name(operation: str) -> str:
    """The CLI command of an operation: ``memory_write`` is ``write``, ``token_create`` is
    ``token create``."""
    group, _, rest = operation.partition("_")
    if group in CLI_GROUPS:
        return f"{group} {rest.replace('_', '-')}"
    return operation.removeprefix("memory_").replace("_", "-")


def invalid_arguments(operation: str, exc: ValidationError) -> LorestoreError:
    """Arguments the params model refused: the code of the field when every problem is in one
    field that has its own (a missing ``scopes`` is ``invalid_scope``, as an empty one is),
    else ``invalid_argument``; the message lists each problem."""
    problems = []
    codes = set()
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        problems.append(f"{where}: {err['msg']}")
        codes.add(FIELD_CODES.get(str(err["loc"][0]), "") if err["loc"] else "")
    return LorestoreError(
        codes.pop() if len(codes) == 1 and "" not in codes else "invalid_argument",
        f"{operation}: " + "; ".join(problems),
        hint=f"see `lorestore {_command_name(operation)} --help`, or the {operation} input "
        "schema (MCP tools/list, or OpenAPI /api/v1/openapi.json)",
        details={"errors": problems},
    )


CATALOG: tuple[Operation, ...] = (
    Operation(
        "memory_write",
        "Write a lesson: create it, record a new version, count a repeat sighting of the same "
        "value, or propose a revision of a verified lesson.",
        WriteParams,
        WriteResult,
        cli_args=("scope", "key", "value"),
        mutates=True,
        permission="write",
    ),
    Operation(
        "memory_read",
        "Read the lesson at an address (optionally as it was at a record time or world time).",
        ReadParams,
        LessonResult,
        cli_args=("scope", "key"),
    ),
    Operation(
        "memory_history",
        "Every version of a lesson, oldest first, with record and world times.",
        Address,
        HistoryResult,
        cli_args=("scope", "key"),
    ),
    Operation(
        "memory_list",
        "List a scope's lessons (or every scope's under a prefix: repo::acme/*), newest or "
        "most seen first, by trust and state.",
        ListParams,
        ListResult,
        cli_args=("scope",),
    ),
    Operation(
        "memory_search",
        "Full-text search (BM25) over the given scopes, or the ladder of a context (repo, "
        "branch, project; the CLI and stdio server read them from git). An agent's search "
        "withholds what recall would hold (disputed, shadowed, revision-held) unless "
        "include_held; a person's shows everything, labelled.",
        SearchParams,
        SearchResult,
        cli_args=("query",),
    ),
    Operation(
        "memory_recall",
        "The lessons that apply to a task in this repository, branch and revision, within a "
        "token budget, fenced as reference data; and the ones held back, with reasons. The "
        "CLI and stdio server read repo, branch and revision from git.",
        RecallParams,
        RecallResult,
    ),
    Operation(
        "memory_explain",
        "Why each lesson did or did not reach a task: the decision a recall logged.",
        ExplainParams,
        ExplainResult,
        cli_args=("recall_id",),
    ),
    Operation(
        "memory_activity",
        "What happened per day: writes, reviews, recalls and the lessons they held.",
        ActivityParams,
        ActivityResult,
    ),
    Operation(
        "memory_recalls",
        "Recent recall decisions from the recall log, newest first: what each offered and "
        "held, and why; optionally only those that offered or held one lesson.",
        RecallsParams,
        RecallsResult,
    ),
    Operation(
        "memory_policy",
        "Read or set a scope's revision policy (none, commit, files) and whether only "
        "verified lessons are offered; * is your default for every scope. A scope's own "
        "policy holds both settings: setting one copies the other as it stands (from *).",
        PolicyParams,
        PolicyResult,
        cli_args=("scope",),
        mutates=True,  # it may set the policy: POST only, and no read-only hint for MCP hosts
    ),
    Operation(
        "project_add",
        "Declare repositories part of a project: recall, search with a context and the hooks "
        "then add the project::NAME rung to every task in them. Needs the review permission: "
        "a person's call, never an agent's.",
        ProjectAddParams,
        ProjectChangeResult,
        cli_args=("name", "repos"),
        mutates=True,
        permission="review",
    ),
    Operation(
        "project_remove",
        "Take repositories out of a project, or (none named) remove the project. Needs the "
        "review permission.",
        ProjectRemoveParams,
        ProjectChangeResult,
        cli_args=("name", "repos"),
        mutates=True,
        permission="review",
    ),
    Operation(
        "project_list",
        "The projects you and your orgs declared, with their repositories.",
        NoParams,
        ProjectListResult,
    ),
    Operation("memory_scopes", "Inventory of scopes with lesson counts.", NoParams, ScopesResult),
    Operation("memory_audit", "The append-only audit log, newest first.", AuditParams, AuditResult),
    Operation(
        "audit_verify",
        "Recompute the audit log's hash chains and check each against its head: an edited, "
        "removed or reordered event shows, and so do the newest events deleted.",
        NoParams,
        AuditVerifyResult,
        surfaces=ADMIN_SURFACES,
        long_running=True,  # every event's hash again: 1.3-1.8 s at 100k lessons
    ),
    Operation(
        "memory_archive",
        "Archive a lesson: hidden from reads, address kept.",
        ChangeParams,
        LessonResult,
        cli_args=("scope", "key"),
        mutates=True,
        permission="write",
    ),
    Operation(
        "memory_restore",
        "Bring an archived lesson back.",
        ChangeParams,
        LessonResult,
        cli_args=("scope", "key"),
        mutates=True,
        permission="write",
    ),
    Operation(
        "memory_dispute",
        "Dispute a lesson: withheld from recall until a reviewer verifies or rejects it.",
        DisputeParams,
        LessonResult,
        cli_args=("scope", "key"),
        mutates=True,
        permission="write",
    ),
    Operation(
        "memory_verify",
        "Verify a lesson, or accept its proposed revision (--revision). Needs the review "
        "permission: a person's call, never an agent's.",
        VerifyParams,
        LessonResult,
        cli_args=("scope", "key"),
        mutates=True,
        permission="review",
    ),
    Operation(
        "memory_reject",
        "Reject a lesson's value, or its proposed revision (--revision), tombstoning it for the "
        "scope and every narrower one; --undo lifts a rejection. Needs the review permission.",
        RejectParams,
        LessonResult,
        cli_args=("scope", "key"),
        mutates=True,
        permission="review",
    ),
    Operation(
        "memory_review_queue",
        "What awaits a person's decision: disputes, proposed revisions, corroborated and "
        "recurring candidates, lessons by outside authors.",
        ReviewQueueParams,
        ReviewQueueResult,
    ),
    Operation(
        "memory_delete",
        "Hard delete: erase a lesson and every version of it.",
        DeleteParams,
        DeleteResult,
        cli_args=("scope", "key"),
        mutates=True,
        permission="admin",
    ),
    Operation(
        "memory_purge",
        "Erase lessons archived longer than the retention period.",
        PurgeParams,
        PurgeResult,
        mutates=True,
        permission="admin",
    ),
    Operation(
        "memory_purge_expired",
        "Erase lessons whose expiry has passed.",
        NoParams,
        PurgeResult,
        mutates=True,
        permission="admin",
    ),
    Operation(
        "memory_export",
        "Export lessons (every version), tombstones and scope policies as JSON Lines, or as a "
        "LoreKit directory tree; filtered by scope, state and time. Streams: memory stays "
        "flat however large the store.",
        ExportParams,
        ExportSummary,
        surfaces=BULK_SURFACES,
        streaming=True,
    ),
    Operation(
        "memory_import",
        "Import a JSON Lines export or a LoreKit tree: ids, versions, trust, times and "
        "provenance kept; tombstones checked first; what the store holds is never "
        "overwritten; every bad line reported with its number. --dry-run writes nothing.",
        ImportParams,
        ImportResult,
        mutates=True,
        surfaces=BULK_SURFACES,
        streaming=True,
        permission="write",
    ),
    Operation(
        "org_create",
        "Create an organisation; you become its owner.",
        OrgCreateParams,
        OrgInfo,
        cli_args=("slug",),
        mutates=True,
        surfaces=ADMIN_SURFACES,
        permission="admin",
    ),
    Operation(
        "org_list",
        "The orgs you belong to, with your role.",
        NoParams,
        OrgListResult,
        surfaces=ADMIN_SURFACES,
    ),
    Operation(
        "org_members",
        "The members of an org you belong to.",
        OrgParams,
        OrgMembersResult,
        cli_args=("org",),
        surfaces=ADMIN_SURFACES,
    ),
    Operation(
        "org_bindings",
        "The scope patterns routed to an org you belong to (and those awaiting approval).",
        OrgParams,
        OrgBindingsResult,
        cli_args=("org",),
        surfaces=ADMIN_SURFACES,
    ),
    Operation(
        "org_invite",
        "Invite a user into an org with a role; the one-time code is shown once.",
        OrgInviteParams,
        OrgInviteResult,
        cli_args=("org", "user"),
        mutates=True,
        surfaces=ADMIN_SURFACES,
        permission="admin",
    ),
    Operation(
        "org_invites",
        "The invites of an org you administer, with their state (pending, accepted, revoked, "
        "void, expired).",
        OrgParams,
        OrgInvitesResult,
        cli_args=("org",),
        surfaces=ADMIN_SURFACES,
        permission="admin",
    ),
    Operation(
        "org_invite_revoke",
        "Take back a pending invite: its code stops working.",
        OrgInviteRevokeParams,
        InviteInfo,
        cli_args=("org", "id"),
        mutates=True,
        surfaces=ADMIN_SURFACES,
        permission="admin",
    ),
    Operation(
        "org_accept",
        "Accept an invite addressed to you, with its code (a person's decision: an agent's "
        "token, or one confined to some scopes or orgs, is refused).",
        OrgAcceptParams,
        OrgInfo,
        cli_args=("code",),
        mutates=True,
        surfaces=ADMIN_SURFACES,
    ),
    Operation(
        "org_remove",
        "Remove a member from an org (or leave it yourself).",
        OrgMemberParams,
        OrgMembersResult,
        cli_args=("org", "user"),
        mutates=True,
        surfaces=ADMIN_SURFACES,
        permission="admin",
    ),
    Operation(
        "org_bind",
        "Route a scope (or pattern such as repo::acme/*) to an org: lessons written there "
        "belong to the org, visible to its members only.",
        OrgBindParams,
        OrgBindingResult,
        cli_args=("org", "pattern"),
        mutates=True,
        surfaces=ADMIN_SURFACES,
        permission="admin",
    ),
    Operation(
        "org_unbind",
        "Remove a scope binding.",
        OrgBindParams,
        OrgBindingResult,
        cli_args=("org", "pattern"),
        mutates=True,
        surfaces=ADMIN_SURFACES,
        permission="admin",
    ),
    Operation(
        "token_create",
        "Create a bearer token; the secret is shown once and stored only as a hash.",
        TokenCreateParams,
        TokenCreateResult,
        mutates=True,
        surfaces=ADMIN_SURFACES,
        permission="admin",
    ),
    Operation(
        "token_list",
        "List your tokens (never their secrets).",
        NoParams,
        TokenListResult,
        surfaces=ADMIN_SURFACES,
        permission="admin",
    ),
    Operation(
        "token_current",
        "Who this call acts as: principal, highest permission, whether it is a person's "
        "credential, and the token itself (never its secret).",
        NoParams,
        TokenCurrentResult,
    ),
    Operation(
        "token_revoke",
        "Revoke a token: it stops working at once.",
        TokenRevokeParams,
        TokenInfo,
        cli_args=("id",),
        mutates=True,
        surfaces=ADMIN_SURFACES,
        permission="admin",
    ),
    Operation(
        "webhook_add",
        "Bind a GitHub repository (owner/name) or account (owner) to a tenant for "
        "POST /webhooks/github; the webhook secret is shown once and stored encrypted.",
        WebhookTargetParams,
        WebhookSecretResult,
        cli_args=("target",),
        mutates=True,
        surfaces=ADMIN_SURFACES,
        permission="admin",
    ),
    Operation(
        "webhook_list",
        "The webhooks of the tenants you administer (never their secrets).",
        NoParams,
        WebhookListResult,
        surfaces=ADMIN_SURFACES,
        permission="admin",
    ),
    Operation(
        "webhook_rotate",
        "A new secret for a webhook, shown once; the old one is still accepted for the grace "
        "period (LORESTORE_WEBHOOK_GRACE_HOURS).",
        WebhookTargetParams,
        WebhookSecretResult,
        cli_args=("target",),
        mutates=True,
        surfaces=ADMIN_SURFACES,
        permission="admin",
    ),
    Operation(
        "webhook_remove",
        "Remove a webhook: its deliveries are refused from then on (401).",
        WebhookTargetParams,
        WebhookInfo,
        cli_args=("target",),
        mutates=True,
        surfaces=ADMIN_SURFACES,
        permission="admin",
    ),
    Operation(
        "webhook_stats",
        "What the webhooks' deliveries became, counted by reason: lessons created, updated "
        "and seen, and what was ignored or refused and why.",
        WebhookStatsParams,
        WebhookStatsResult,
        surfaces=ADMIN_SURFACES,
    ),
)

BY_NAME = {op.name: op for op in CATALOG}


def on_surface(surface: Surface) -> tuple[Operation, ...]:
    return tuple(op for op in CATALOG if surface in op.surfaces)
