"""Rich output for people. ``--json`` bypasses this and prints the result model as is."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from lorestore.core.errors import LorestoreError
from lorestore.core.records import Lesson
from lorestore.models import (
    AuditResult,
    DeleteResult,
    HistoryResult,
    LessonResult,
    ListResult,
    PurgeResult,
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


def _lesson_panel(lesson: Lesson) -> Panel:
    meta = [f"v{lesson.version}", _trust(lesson), f"seen {lesson.seen_count}"]
    if lesson.tags:
        meta.append("tags: " + ", ".join(escape(t) for t in lesson.tags))
    if lesson.expires_at:
        meta.append(f"expires {lesson.expires_at}")
    if lesson.pending_revision:
        meta.append("[bold]revision pending review[/]")
    body = escape(lesson.value) + "\n\n[dim]" + " · ".join(meta) + f"\nupdated {lesson.updated_at}"
    body += f" · id {lesson.id}[/]"
    return Panel(body, title=f"{escape(lesson.scope)} / {escape(lesson.key)}", title_align="left")


def render(console: Console, result: Result) -> None:
    if isinstance(result, WriteResult):
        lesson = result.lesson
        console.print(
            f"[bold]{result.result}[/] {escape(lesson.scope)} / {escape(lesson.key)} "
            f"(v{lesson.version}, {_trust(lesson)}, seen {lesson.seen_count})"
        )
    elif isinstance(result, LessonResult):
        console.print(_lesson_panel(result.lesson))
    elif isinstance(result, HistoryResult):
        table = Table(
            "v",
            "state",
            "recorded",
            "actor",
            "value",
            title=escape(f"{result.scope} / {result.key} ({result.status})"),
        )
        for v in result.versions:
            table.add_row(
                str(v.version), v.state, v.recorded_at, v.actor, escape(_excerpt(v.value))
            )
        console.print(table)
    elif isinstance(result, ListResult):
        table = Table("key", "trust", "v", "tags", "updated", "value")
        for lesson in result.lessons:
            table.add_row(
                escape(lesson.key),
                _trust(lesson),
                str(lesson.version),
                escape(",".join(lesson.tags)),
                lesson.updated_at,
                escape(_excerpt(lesson.value, 60)),
            )
        console.print(table if result.lessons else "[dim]no lessons[/]")
        if result.next_cursor:
            console.print(f"[dim]more: --cursor {result.next_cursor}[/]")
    elif isinstance(result, SearchResult):
        table = Table("score", "scope", "key", "trust", "snippet")
        for hit in result.hits:
            table.add_row(
                f"{hit.score:.3f}",
                escape(hit.lesson.scope),
                escape(hit.lesson.key),
                _trust(hit.lesson),
                escape(_excerpt(hit.snippet, 70)),
            )
        console.print(table if result.hits else "[dim]no matches[/]")
    elif isinstance(result, ScopesResult):
        table = Table("scope", "active", "archived", "expired", "rejected")
        for s in result.scopes:
            table.add_row(
                escape(s.scope), str(s.active), str(s.archived), str(s.expired), str(s.rejected)
            )
        console.print(table if result.scopes else "[dim]no lessons yet[/]")
    elif isinstance(result, AuditResult):
        table = Table("id", "at", "actor", "action", "scope", "key", "version")
        for e in result.events:
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
        console.print(table)
        if result.next_cursor:
            console.print(f"[dim]more: --cursor {result.next_cursor}[/]")
    elif isinstance(result, ReviewQueueResult):
        table = Table("why", "scope", "key", "trust", "seen", "value")
        for item in result.items:
            shown = item.proposed.value if item.proposed else item.lesson.value
            table.add_row(
                item.reason,
                escape(item.lesson.scope),
                escape(item.lesson.key),
                _trust(item.lesson),
                str(item.lesson.seen_count),
                escape(_excerpt(shown, 60)),
            )
        console.print(table if result.items else "[dim]nothing awaits review[/]")
    elif isinstance(result, TokenCreateResult):
        console.print(f"[bold]{escape(result.token)}[/]")
        console.print(
            f"[dim]token {result.info.id} ({result.info.permission}) for "
            f"{escape(result.info.principal)}: shown once, stored only as a hash. "
            "Send it as `Authorization: Bearer <token>`.[/]"
        )
    elif isinstance(result, TokenListResult | TokenInfo):
        tokens = result.tokens if isinstance(result, TokenListResult) else [result]
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
        console.print(table)
    elif isinstance(result, DeleteResult):
        console.print(
            f"deleted {escape(result.scope)} / {escape(result.key)}: "
            f"{result.versions_erased} version(s) erased"
        )
    elif isinstance(result, PurgeResult):
        console.print(f"purged {result.purged} lesson(s)")
    else:  # pragma: no cover - every result type is listed above
        console.print_json(result.model_dump_json())


def render_error(console: Console, error: LorestoreError) -> None:
    console.print(f"[red]error[/] [bold]{error.code}[/]: {escape(error.message)}")
    if error.hint:
        console.print(f"[dim]hint:[/] {escape(error.hint)}")
