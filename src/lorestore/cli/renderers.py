"""Rich output for people: one small renderer per result type (cli/render.py picks it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from lorestore.core.recall import show_controls
from lorestore.core.records import Lesson
from lorestore.models import (
    AuditResult,
    AuditVerifyResult,
    DeleteResult,
    ExplainResult,
    HistoryResult,
    InviteInfo,
    LessonResult,
    ListResult,
    OrgBindingResult,
    OrgInfo,
    OrgInviteResult,
    OrgInvitesResult,
    OrgListResult,
    OrgMembersResult,
    PolicyResult,
    ProjectChangeResult,
    ProjectListResult,
    PurgeResult,
    RecallResult,
    Result,
    ReviewQueueResult,
    ScopesResult,
    SearchResult,
    TokenCreateResult,
    TokenInfo,
    TokenListResult,
    WriteResult,
)

_TRUST_STYLE = {
    "verified": "green",
    "corroborated": "cyan",
    "candidate": "yellow",
    "disputed": "magenta",
    "rejected": "red",
}


def _excerpt(text: str, width: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _trust(lesson: Lesson) -> str:
    return f"[{_TRUST_STYLE[lesson.trust]}]{lesson.trust}[/]"


def _write(c: Console, r: WriteResult) -> None:
    lesson = r.lesson
    c.print(
        f"[bold]{r.result}[/] {escape(lesson.scope)} / {escape(lesson.key)} "
        f"(v{lesson.version}, {_trust(lesson)}, seen {lesson.seen_count})"
    )


def _lesson(c: Console, r: LessonResult) -> None:
    lesson = r.lesson
    meta = [f"v{lesson.version}", _trust(lesson), f"seen {lesson.seen_count}"]
    if lesson.tags:
        meta.append("tags: " + ", ".join(escape(t) for t in lesson.tags))
    if lesson.expires_at:
        meta.append(f"expires {lesson.expires_at}")
    if lesson.pending_revision:
        meta.append("[bold]revision pending review[/]")
    body = escape(lesson.value) + "\n\n[dim]" + " · ".join(meta)
    body += f"\nupdated {lesson.updated_at} · id {lesson.id}[/]"
    title = f"{escape(lesson.scope)} / {escape(lesson.key)}"
    c.print(Panel(body, title=title, title_align="left", expand=False))


def _history(c: Console, r: HistoryResult) -> None:
    title = escape(f"{r.scope} / {r.key} ({r.status}, {r.trust})")
    table = Table("v", "state", "recorded", "actor", "value", title=title)
    for v in r.versions:
        table.add_row(str(v.version), v.state, v.recorded_at, v.actor, escape(_excerpt(v.value)))
    c.print(table)


def _list(c: Console, r: ListResult) -> None:
    table = Table("key", "trust", "v", "tags", "updated", "value")
    for lesson in r.lessons:
        table.add_row(
            escape(lesson.key),
            _trust(lesson),
            str(lesson.version),
            escape(",".join(lesson.tags)),
            lesson.updated_at,
            escape(_excerpt(lesson.value, 60)),
        )
    c.print(table if r.lessons else "[dim]no lessons[/]")
    if r.next_cursor:
        c.print(f"[dim]more: --cursor {r.next_cursor}[/]")


def _search(c: Console, r: SearchResult) -> None:
    table = Table("score", "scope", "key", "trust", "recall would", "snippet")
    for hit in r.hits:
        table.add_row(
            f"{hit.score:.3g}",
            escape(hit.lesson.scope),
            escape(hit.lesson.key),
            _trust(hit.lesson),
            "[yellow]hold: " + escape(", ".join(hit.held)) + "[/]" if hit.held else "offer",
            escape(_excerpt(hit.snippet, 60)),
        )
    c.print(table if r.hits else "[dim]no matches[/]")
    if r.withheld:
        c.print(f"[dim]{r.withheld} withheld as recall would (include them: --include-held)[/]")


def _scopes(c: Console, r: ScopesResult) -> None:
    table = Table("owner", "scope", "active", "archived", "expired", "rejected")
    for s in r.scopes:
        table.add_row(
            escape(s.owner),
            escape(s.scope),
            str(s.active),
            str(s.archived),
            str(s.expired),
            str(s.rejected),
        )
    c.print(table if r.scopes else "[dim]no lessons yet[/]")


def _audit(c: Console, r: AuditResult) -> None:
    table = Table("id", "at", "actor", "action", "scope", "key", "version")
    for e in r.events:
        versions = f"{e.before_version or '-'} → {e.after_version or '-'}"
        table.add_row(
            str(e.id),
            e.at,
            escape(e.actor),
            e.action,
            escape(e.scope or ""),
            escape(e.key or ""),
            versions,
        )
    c.print(table)
    if r.next_cursor:
        c.print(f"[dim]more: --cursor {r.next_cursor}[/]")


def _audit_verify(c: Console, r: AuditVerifyResult) -> None:
    for chain in r.chains:
        problems = []
        if "broken" in chain.faults:
            problems.append(f"broken at event {chain.first_break}")
        if "truncated" in chain.faults and chain.head_events is not None:
            missing = chain.head_events - chain.events
            problems.append(f"{missing} events missing: its head counts {chain.head_events}")
        if "head_mismatch" in chain.faults:
            problems.append("its end does not match its head")
        state = f"[red]{escape('; '.join(problems))}[/]" if problems else "[green]intact[/]"
        c.print(f"{escape(chain.owner)}: {chain.events} events, {state}")


def _review_queue(c: Console, r: ReviewQueueResult) -> None:
    table = Table("why", "scope", "key", "trust", "seen", "value")
    for item in r.items:
        shown = item.proposed.value if item.proposed else item.lesson.value
        table.add_row(
            item.reason,
            escape(item.lesson.scope),
            escape(item.lesson.key),
            _trust(item.lesson),
            str(item.lesson.seen_count),
            escape(_excerpt(shown, 60)),
        )
    c.print(table if r.items else "[dim]nothing awaits review[/]")


def _token_created(c: Console, r: TokenCreateResult) -> None:
    c.print(f"[bold]{escape(r.token)}[/]")
    c.print(
        f"[dim]token {r.info.id} ({r.info.permission}) for {escape(r.info.principal)}: "
        "shown once, stored only as a hash. Send it as `Authorization: Bearer <token>`.[/]"
    )


def _tokens(c: Console, r: TokenListResult | TokenInfo) -> None:
    tokens = r.tokens if isinstance(r, TokenListResult) else [r]
    table = Table("id", "name", "prefix", "permission", "scopes", "expires", "state")
    for t in tokens:
        state = "revoked" if t.revoked_at else f"last used {t.last_used_at or 'never'}"
        table.add_row(
            t.id,
            escape(t.name),
            t.prefix + "…",
            t.permission,
            escape(", ".join(t.scopes or ["any"])),
            t.expires_at or "never",
            state,
        )
    c.print(table)


def _recall(c: Console, r: RecallResult) -> None:
    # The block is copied verbatim: no markup, no emoji codes (":warning:"), no highlighting.
    c.print(r.text, markup=False, emoji=False, highlight=False, soft_wrap=True)
    if r.held:
        table = Table("held", "scope", "key", "trust", title="held back")
        for h in r.held:
            table.add_row(escape(", ".join(h.reasons)), escape(h.scope), escape(h.key), h.trust)
        c.print(table)
    c.print(
        f"[dim]{len(r.offered)} offered, {len(r.held)} held, "
        f"{r.tokens_used}/{r.context.budget} tokens · lorestore explain {r.recall_id}[/]"
    )
    if r.context.projects:
        c.print(f"[dim]project rungs: {escape(', '.join(r.context.projects))}[/]")
    if r.context.repo is None:
        c.print(
            "[yellow]no repository[/]: not in a git checkout with a usable remote, and no "
            "--repo, so no repo or branch lessons were considered (run it in the checkout, or "
            "pass --repo OWNER/NAME)",
            highlight=False,
        )


def _explain(c: Console, r: ExplainResult) -> None:
    table = Table(
        "decision",
        "scope",
        "key",
        "v",
        "reasons",
        title=f"recall {r.recall_id} at {r.at} by {escape(r.actor)}",
    )
    for decision, rows in (("[green]offered[/]", r.offered), ("[yellow]held[/]", r.held)):
        for item in rows:
            table.add_row(
                decision,
                escape(item.scope),
                escape(item.key),
                str(item.version),
                escape(", ".join(item.reasons)),
            )
    c.print(table)
    projects = r.context.get("projects") or []
    if projects:
        c.print(f"[dim]project rungs: {escape(', '.join(map(str, projects)))}[/]")


def _policy(c: Console, r: PolicyResult) -> None:
    where = f" (inherited from {r.inherited_from})" if r.inherited_from else ""
    review = "required" if r.require_review else "not required"
    c.print(
        f"{escape(r.scope)} ({escape(r.owner)}): revision {r.revision_policy}, "
        f"review {review}{where}"
    )


def _org(c: Console, r: OrgInfo) -> None:
    c.print(f"{escape(r.org)}: you are {r.role}")


def _orgs(c: Console, r: OrgListResult) -> None:
    for org in r.orgs:
        _org(c, org)
    if not r.orgs:
        c.print("[dim]you belong to no org[/]")


def _members(c: Console, r: OrgMembersResult) -> None:
    table = Table("member", "role", "since", title=escape(r.org))
    for m in r.members:
        table.add_row(escape(m.member), m.role, m.since)
    c.print(table)


def _invite(c: Console, r: OrgInviteResult) -> None:
    c.print(f"[bold]{escape(r.code)}[/]")
    c.print(
        f"[dim]invite for {escape(r.invitee)} to {escape(r.org)} as {r.role}, until "
        f"{r.expires_at}; shown once. They run: lorestore org accept CODE "
        f"(take it back: lorestore org invite-revoke ORG {r.id})[/]"
    )


def _binding(c: Console, r: OrgBindingResult) -> None:
    if r.pending:
        c.print(f"{escape(r.pattern)} asked for {escape(r.org)}: pending", highlight=False)
        c.print(f"[dim]{escape(r.hint or '')}[/]", highlight=False)
        return
    verb = "bound to" if r.bound else "unbound from"
    c.print(f"{escape(r.pattern)} {verb} {escape(r.org)}")
    if r.own_lessons_routed:
        c.print(
            f"[yellow]note[/]: {r.own_lessons_routed} lesson(s) of your own sit at scopes "
            f"{escape(r.pattern)} covers; reads and writes there now go to {escape(r.org)}, so "
            "they are out of your reach (kept, not deleted) until it is unbound",
            highlight=False,
        )


def _invites(c: Console, r: OrgInvitesResult) -> None:
    if not r.invites:
        c.print(f"{escape(r.org)} has no invites")
    for i in r.invites:
        c.print(
            f"{i.id}  {escape(i.invitee)} as {i.role}  {i.state}  by {escape(i.created_by)}, "
            f"until {i.expires_at}",
            highlight=False,
        )


def _invite_revoked(c: Console, r: InviteInfo) -> None:
    c.print(f"invite {r.id} for {escape(r.invitee)}: {r.state}", highlight=False)


def _delete(c: Console, r: DeleteResult) -> None:
    c.print(f"deleted {escape(r.scope)} / {escape(r.key)}: {r.versions_erased} version(s) erased")


def _projects(c: Console, r: ProjectListResult) -> None:
    table = Table("project", "owner", "repositories")
    for p in r.projects:
        table.add_row(escape(p.name), escape(p.owner), escape(", ".join(p.repos)))
    c.print(
        table if r.projects else "[dim]no projects: lorestore project add NAME OWNER/REPO...[/]"
    )


def _project_changed(c: Console, r: ProjectChangeResult) -> None:
    repos = ", ".join(r.repos) or "no repository (the project is gone)"
    changed = ", ".join(r.changed) or "nothing"
    c.print(f"{escape(r.scope)} ({escape(r.owner)}): {escape(repos)}", highlight=False)
    c.print(f"[dim]changed: {escape(changed)}[/]", highlight=False)


def _purge(c: Console, r: PurgeResult) -> None:
    c.print(f"purged {r.purged} lesson(s)")


RENDERERS: dict[type[Result], Callable[[Console, Any], None]] = {
    WriteResult: _write,
    LessonResult: _lesson,
    HistoryResult: _history,
    ListResult: _list,
    SearchResult: _search,
    ScopesResult: _scopes,
    AuditResult: _audit,
    AuditVerifyResult: _audit_verify,
    ReviewQueueResult: _review_queue,
    TokenCreateResult: _token_created,
    TokenListResult: _tokens,
    TokenInfo: _tokens,
    RecallResult: _recall,
    ExplainResult: _explain,
    PolicyResult: _policy,
    OrgInfo: _org,
    OrgListResult: _orgs,
    OrgMembersResult: _members,
    OrgInviteResult: _invite,
    OrgBindingResult: _binding,
    OrgInvitesResult: _invites,
    InviteInfo: _invite_revoked,
    DeleteResult: _delete,
    PurgeResult: _purge,
    ProjectListResult: _projects,
    ProjectChangeResult: _project_changed,
}


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return show_controls(value)
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def shown(result: Result) -> Result:
    """The result as a terminal shows it: a control character someone wrote into a lesson (an
    escape sequence, a carriage return) appears as its control picture (ESC as U+241B) and
    cannot move the cursor, retitle the window or clear the screen."""
    data = result.model_dump()
    cleaned = _clean(data)
    return result if cleaned == data else type(result).model_validate(cleaned)
