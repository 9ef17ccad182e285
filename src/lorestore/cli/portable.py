"""``lorestore export``, and what it shares with ``lorestore import`` (cli/importing.py): the
hand-written adapters of the two streaming operations, since the generated commands take one
request and print one result. Records flow a chunk at a time between the file and the store
(or, with LORESTORE_URL, the server); a Rich progress bar shows on a terminal."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any

import typer

from lorestore.auth.actor import local_actor
from lorestore.cli.render import failure, make_console
from lorestore.config import Settings, load_settings
from lorestore.core.errors import LorestoreError
from lorestore.operations import BY_NAME
from lorestore.portable.jsonl import is_header, read_records
from lorestore.portable.models import ExportParams, ExportSummary

if TYPE_CHECKING:  # Rich and the LoreKit format are imported when used
    from rich.console import Console

    from lorestore.portable import lorekit_writer

CHUNK = 1024 * 1024
Advance = Callable[[int], None]


def err_console() -> Console:
    return make_console(stderr=True)


@contextmanager
def progress(label: str, total: int | None, enabled: bool) -> Iterator[Advance]:
    """A Rich progress bar on stderr when it is a terminal; ``total`` None: a running count."""
    from rich.progress import BarColumn, DownloadColumn, Progress, SpinnerColumn, TextColumn

    console = err_console()
    if not (enabled and console.is_terminal):
        yield lambda n: None
        return
    columns: list[Any] = [SpinnerColumn(), TextColumn(label)]
    columns += [BarColumn(), DownloadColumn()] if total else [TextColumn("{task.completed}")]
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


def the_actor(settings: Settings) -> Any:
    return local_actor(principal=settings.principal, session=settings.session, agent=settings.agent)


def remote_client(settings: Settings) -> Any:
    from lorestore.transports.http.streaming_client import StreamingClient

    assert settings.url is not None and settings.token is not None
    return StreamingClient(
        settings.url, settings.token, session=settings.session, agent=settings.agent
    )


# --- export ----------------------------------------------------------------------------------


def export_command(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="where to write: a file (JSON Lines; '-' or omitted: stdout), or the LoreKit "
            "directory",
            show_default=False,
        ),
    ] = None,
    format: Annotated[
        str, typer.Option("--format", help="jsonl (docs/format.md) or lorekit")
    ] = "jsonl",
    scopes: Annotated[
        list[str] | None,
        typer.Option("--scope", "-s", help="only this scope or pattern (repo::acme/*); repeatable"),
    ] = None,
    states: Annotated[
        list[str] | None,
        typer.Option(
            "--state", help="only lessons active, archived, expired or rejected; repeatable"
        ),
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="only records changed at or after this time")
    ] = None,
    until: Annotated[str | None, typer.Option(help="only records changed before this time")] = None,
    history: Annotated[
        bool,
        typer.Option(
            "--history/--no-history",
            show_default=False,
            help="include every version of each lesson (the default), or only the current one",
        ),
    ] = True,
    json_output: Annotated[
        bool, typer.Option("--json", help="print the summary (or error) as JSON")
    ] = False,
) -> None:
    """Export lessons (every version), tombstones and scope policies as JSON Lines, or as a
    LoreKit directory tree; filtered by scope, state and time. What LoreKit cannot hold is
    reported. The summary goes to stderr when the data goes to stdout."""
    to_stdout = path is None or str(path) == "-"
    try:
        arguments: dict[str, Any] = {"format": format, "scopes": scopes, "states": states}
        arguments |= {"since": since, "until": until, "history": history}
        params = BY_NAME["memory_export"].parse(
            {k: v for k, v in arguments.items() if v is not None}
        )
        assert isinstance(params, ExportParams)
        if params.format == "lorekit" and to_stdout:
            raise LorestoreError(
                "invalid_argument",
                "a LoreKit export writes a directory tree",
                hint="name the directory: lorestore export --format lorekit ~/.lorekit",
            )
        try:
            summary = _export(load_settings(), params, None if to_stdout else path, not json_output)
        except BrokenPipeError:
            # The reader of stdout went away (`lorestore export | head`): stop quietly, as a
            # command killed by SIGPIPE does, with nothing more written to the closed pipe.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(128 + signal.SIGPIPE) from None
        except OSError as exc:  # the path: a missing directory, a file where one is needed
            raise LorestoreError(
                "invalid_argument",
                f"cannot write the export at {path}: {exc.strerror or exc}"
                + (f" ({exc.filename})" if exc.filename else ""),
                hint="name a file in an existing directory (JSON Lines) or a directory that "
                "is not a file and holds no file named global, project, repo or branch "
                "(LoreKit)",
            ) from exc
    except LorestoreError as error:
        raise failure(error, json_output) from None
    _print_summary(summary, json_output, to_stdout)
    if params.format == "lorekit":
        from lorestore.portable.lorekit import OUTSIDE_TREE

        if summary.withheld.get(OUTSIDE_TREE):  # lessons it was asked to write and did not
            raise typer.Exit(1)


def _export(
    settings: Settings, params: ExportParams, path: Path | None, show: bool
) -> ExportSummary:
    with progress("exporting records", None, show) as advance:
        if settings.remote:
            client = remote_client(settings)
            try:
                return _write(params, path, client.export_chunks(params), advance, None)
            finally:
                client.close()
        from lorestore.composition import build_service

        service = build_service(settings)
        try:
            export = service.memory_export(the_actor(settings), params)
            return _write(params, path, export.chunks(), advance, export.summary)
        finally:
            service.store.close()


def _write(
    params: ExportParams,
    path: Path | None,
    chunks: Iterator[bytes],
    advance: Advance,
    summary: Callable[[], ExportSummary] | None,
) -> ExportSummary:
    counts: dict[str, int] = {}

    def counted(records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for record in records:
            kind = str(record.get("type"))
            counts[kind] = counts.get(kind, 0) + 1
            advance(1)
            yield record

    if params.format == "lorekit":
        assert path is not None
        from lorestore.portable import lorekit_writer

        writer = lorekit_writer.TreeWriter(path)

        def readable() -> Iterator[dict[str, Any]]:
            for r in read_records(chunks):
                if r.error is not None:  # a record no file can carry is said, not skipped
                    writer.report.not_kept["unreadable_record"] += 1
                    writer.report.note(
                        {"type": "lesson"}, "not_written", f"line {r.line}: {r.error}"
                    )
                elif r.record and not is_header(r.record):
                    yield r.record

        report = writer.write_all(counted(readable()))
        base = summary() if summary else _counted_summary(counts)
        return _lorekit_summary(base, report)
    with _sink(path) as out:
        for chunk in chunks:
            out.write(chunk)
            for kind in _types(chunk):
                counts[kind] = counts.get(kind, 0) + 1
            advance(chunk.count(b"\n"))
    return summary() if summary else _counted_summary(counts)


_PREFIXES = {
    b'{"type":"lesson"': "lesson",
    b'{"type":"tombstone"': "tombstone",
    b'{"type":"scope_policy"': "scope_policy",
    b'{"type":"project",': "project",
}


def _types(chunk: bytes) -> Iterator[str]:
    """The type of each record in a chunk of an export (lorestore writes ``type`` first)."""
    for line in chunk.splitlines():
        if line.startswith(b'{"type":'):
            yield next((k for p, k in _PREFIXES.items() if line.startswith(p)), "unknown")


def _counted_summary(counts: dict[str, int]) -> ExportSummary:
    return ExportSummary(
        format="jsonl",
        lessons=counts.get("lesson", 0),
        tombstones=counts.get("tombstone", 0),
        scope_policies=counts.get("scope_policy", 0),
        projects=counts.get("project", 0),
        unknown=sum(v for k, v in counts.items() if k not in _PREFIXES.values()),
        withheld={},
    )


def _lorekit_summary(base: ExportSummary, report: lorekit_writer.TreeReport) -> ExportSummary:
    withheld = dict(base.withheld) | dict(report.withheld)
    return base.model_copy(
        update={
            "format": "lorekit",
            "withheld": dict(sorted(withheld.items())),
            "not_kept": dict(sorted(report.not_kept.items())),
            "files": {"written": report.written, "unchanged": report.unchanged},
            "notes": report.notes,
        }
    )


@contextmanager
def _sink(path: Path | None) -> Iterator[IO[bytes]]:
    if path is None:
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    with path.open("wb") as out:
        yield out


def _print_summary(summary: ExportSummary, as_json: bool, to_stdout: bool) -> None:
    if as_json:
        print(summary.model_dump_json(indent=2), file=sys.stderr if to_stdout else sys.stdout)
        return
    from rich.markup import escape

    console = err_console() if to_stdout else make_console()
    parts = [f"{summary.lessons} lessons", f"{summary.tombstones} tombstones"]
    parts += [f"{summary.scope_policies} scope policies", f"{summary.unknown} unknown records"]
    console.print("exported " + ", ".join(parts), highlight=False)
    for reason, count in summary.withheld.items():
        console.print(f"[yellow]withheld[/] {count}: {reason}", highlight=False)
    for kind, count in summary.not_kept.items():
        console.print(f"[yellow]LoreKit cannot hold[/] {kind}: {count}", highlight=False)
    if summary.files:
        console.print(
            f"files written {summary.files['written']}, unchanged {summary.files['unchanged']}",
            highlight=False,
        )
    for note in summary.notes or []:
        where = f"{note.scope} / {note.key}: " if note.scope is not None else ""
        console.print(f"[yellow]{note.code}[/] {escape(where + note.message)}", highlight=False)
