"""``lorestore migrate``: copy a store between SQLite and PostgreSQL (either way), adding only
what the target lacks: the whole store into an empty target, or one person's tenant (``--as``)
into a target with principals; a Rich progress bar on a terminal, a per-table report after,
exit status 1 when anything was not copied."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from lorestore.cli.render import make_console, render_error
from lorestore.core.errors import LorestoreError

if TYPE_CHECKING:  # the copy and its progress bar are imported when a copy runs
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from lorestore.storage.transfer import TransferReport

_URL_RULE = (
    "sqlite:///PATH, or postgresql://ROLE@HOST:PORT/DB as a role that bypasses row-level "
    "security (a superuser, e.g. the URL given to `lorestore db init`)"
)


class _Bar:
    """The copy's progress as one Rich task per table."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task: TaskID | None = None

    def start(self, table: str, total: int) -> None:
        self._task = self._progress.add_task(table, total=total) if total else None

    def advance(self, rows: int) -> None:
        if self._task is not None:
            self._progress.advance(self._task, rows)


def migrate_command(
    source: Annotated[
        str, typer.Option("--from", metavar="URL", help=f"the store to copy: {_URL_RULE}")
    ],
    target: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="URL",
            help="the store to copy into, same forms; a SQLite file is created if missing, a "
            "PostgreSQL database must have been set up with `lorestore db init`",
        ),
    ],
    as_user: Annotated[
        str | None,
        typer.Option(
            "--as",
            metavar="USER",
            help="move only the lessons, tombstones, policies, audit chain and recalls USER "
            "owns, as USER: needed when the target has principals; verified lessons stay "
            "verified only if USER holds a review token there; tokens, memberships and other "
            "principals' rows never move",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="do the whole copy, report it, and write nothing"),
    ] = False,
    json_output: Annotated[
        bool, typer.Option("--json", help="print the report (or error) as JSON")
    ] = False,
) -> None:
    """Copy a store into another, SQLite or PostgreSQL either way. Into an empty target, the
    whole store: lessons with every version, trust, review and provenance; tombstones; the
    audit log with its hash chains; users, orgs, memberships, invites, bindings, tokens
    (hashes), scope policies, the recall log and each owner's cap. Into a target with
    principals, one person's tenant at a time with --as USER, treating the source as
    untrusted. Only what the target lacks is added; a lesson whose value the target has
    rejected is refused and listed. Exit status 1 when some row was not copied."""
    try:
        report = _run(
            source, target, dry_run=dry_run, show_progress=not json_output, as_user=as_user
        )
    except LorestoreError as error:
        if json_output:
            print(json.dumps({"error": error.to_dict()}, ensure_ascii=False), file=sys.stderr)
        else:
            render_error(make_console(stderr=True), error)
        raise typer.Exit(2 if error.bad_input else 1) from None
    if json_output:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        _render(make_console(), report)
    if not report.complete:
        raise typer.Exit(1)


def _run(
    source: str, target: str, *, dry_run: bool, show_progress: bool, as_user: str | None
) -> TransferReport:
    from functools import partial

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from lorestore.config import load_settings
    from lorestore.storage.transfer import migrate_store

    corroborate_at = load_settings(use_login=False).corroborate_at
    copy = partial(
        migrate_store,
        source,
        target,
        dry_run=dry_run,
        as_user=as_user,
        corroborate_at=corroborate_at,
    )
    console = make_console(stderr=True)
    if not (show_progress and console.is_terminal):
        return copy()
    columns = (
        TextColumn("{task.description:<16}"),
        BarColumn(),
        MofNCompleteColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        return copy(progress=_Bar(progress))


def _render(console: Console, report: TransferReport) -> None:
    from rich.markup import escape
    from rich.table import Table

    verb = "would copy" if report.dry_run else "copied"
    table = Table(title=f"{escape(report.source)} -> {escape(report.target)}")
    columns = ["table", "source", verb, "present", "differs", "refused"]
    if report.tenant is not None:
        columns.append("skipped")
    for column in columns:
        table.add_column(column, justify="left" if column == "table" else "right")
    for t in report.tables:
        cells = [t.source, t.copied, t.present, t.differs, t.refused]
        if report.tenant is not None:
            cells.append(t.skipped)
        table.add_row(t.table, *(str(c) for c in cells))
    console.print(table)
    console.print(escape(report.mode), highlight=False)
    for chain in report.chains:
        if chain["linked"]:
            console.print(
                f"audit chain of {escape(chain['owner'])}: {chain['copied']} event(s) carried "
                "after the target's own, under a migration record linking both heads",
                highlight=False,
            )
    if report.trust_lowered:
        console.print(
            f"{len(report.trust_lowered)} verified lesson(s) landed in their non-verified "
            "state (audited as migrate.trust_lowered)",
            highlight=False,
        )
    for item in report.left_out:
        console.print(f"[yellow]{item.reason}[/] {item.table} {escape(item.key)}: ", end="")
        console.print(escape(item.message), highlight=False)
    summary = f"{verb} {report.copied} row(s) in {report.seconds:.1f}s"
    done = summary + (" (dry run: nothing was written)" if report.dry_run else "")
    console.print(done, highlight=False)
    if not report.complete:
        console.print(
            f"[red]incomplete[/]: {len(report.left_out)} row(s) or chain(s) were not copied "
            "(listed above); everything else landed",
            highlight=False,
        )
