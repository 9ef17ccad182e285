"""``lorestore import``: a JSON Lines file (or stdin) or LoreKit trees into the store, a chunk
at a time; with LORESTORE_URL, sent to the server as the request body while it is read.
Problems print as they are found; the result follows as a table, or JSON with ``--json``."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import typer

from lorestore.cli.portable import CHUNK, Advance, err_console, progress, remote_client, the_actor
from lorestore.cli.render import failure, make_console
from lorestore.config import Settings, load_settings
from lorestore.core.errors import BYTES_CAP_HINT, CAP_HINT, LorestoreError
from lorestore.operations import BY_NAME
from lorestore.portable.jsonl import Incoming, encode, read_records
from lorestore.portable.models import LISTED, ImportParams, ImportResult, Problem

if TYPE_CHECKING:  # Rich is imported when something is printed
    from rich.console import Console


def import_command(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="a JSON Lines file ('-' or omitted: stdin), or LoreKit directories (omitted: "
            "~/.lorekit and <repo>/.lorekit)",
            show_default=False,
        ),
    ] = None,
    format: Annotated[
        str, typer.Option("--format", help="jsonl (docs/format.md) or lorekit")
    ] = "jsonl",
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="check every record, report what would change, write nothing"
        ),
    ] = False,
    json_output: Annotated[
        bool, typer.Option("--json", help="print the result (or error) as JSON")
    ] = False,
) -> None:
    """Import a JSON Lines export or LoreKit trees: ids, versions, trust, times and provenance
    kept; tombstones checked first (refused lessons listed with the reason, the rest land);
    what the store holds is never overwritten; a bad line is reported with its number and
    skipped. Importing the same file twice changes nothing. Exit status 1 when some record
    did not land (the rest did)."""
    try:
        arguments = {"format": format, "dry_run": dry_run}
        params = BY_NAME["memory_import"].parse(arguments)
        assert isinstance(params, ImportParams)
        settings = load_settings()
        printer = None if json_output else _ProblemPrinter()
        result = _import(settings, params, _sources(params, paths or []), printer)
    except LorestoreError as error:
        raise failure(error, json_output) from None
    if json_output:
        print(result.model_dump_json(indent=2))
    else:
        assert printer is not None
        printer.summarise()
        _render_result(make_console(), result)
    if _incomplete(result):
        raise typer.Exit(1)


def _incomplete(result: ImportResult) -> bool:
    """Whether some record did not land (invalid, refused, or held otherwise by the store):
    the exit status is 1 then, though everything else was imported."""
    kinds = (result.lessons, result.tombstones, result.scope_policies, result.unknown)
    return result.invalid > 0 or any(o.refused or o.differs for o in kinds)


@dataclasses.dataclass
class _Source:
    """The records to import, and a progress total (bytes of a file) when there is one."""

    records: Iterator[Incoming]
    chunks: Iterator[bytes] | None
    total: int | None


def _sources(params: ImportParams, paths: list[Path]) -> _Source:
    if params.format == "lorekit":
        from lorestore.portable import lorekit

        repo = None if paths else _repo_root()
        roots = paths or lorekit.default_tiers(Path.home(), repo)
        if not roots:
            raise LorestoreError(
                "invalid_argument",
                "no LoreKit directory found (~/.lorekit, <repo>/.lorekit)",
                hint="name one: lorestore import --format lorekit DIR",
            )
        # A repository's tier is read only while it stays in the repository (a clone's
        # .lorekit may link anywhere); a tree named on the command line is the person's call.
        bounds = {repo / ".lorekit": repo} if repo is not None else {}
        return _Source(_tree_records(roots, bounds), None, None)
    if len(paths) > 1:
        raise LorestoreError("invalid_argument", "import one JSON Lines file at a time")
    path = paths[0] if paths and str(paths[0]) != "-" else None
    if path is not None and not path.is_file():
        raise LorestoreError("invalid_argument", f"there is no file {path}")
    if path is None and (sys.stdin is None or sys.stdin.isatty()):
        raise LorestoreError(
            "invalid_argument",
            "no file to import: name one, or pipe it on stdin",
            hint="lorestore import lessons.jsonl  (or: lorestore import - < lessons.jsonl)",
        )
    total = path.stat().st_size if path else None
    return _Source(iter(()), _file_chunks(path), total)


def _repo_root() -> Path | None:
    from lorestore.gitinfo import git_context

    context = git_context(os.getcwd())
    return Path(context.root) if context else None


def _tree_records(roots: list[Path], bounds: dict[Path, Path]) -> Iterator[Incoming]:
    from lorestore.portable import lorekit

    for root in roots:
        if not root.is_dir():
            raise LorestoreError("invalid_argument", f"there is no LoreKit directory {root}")
        for incoming in lorekit.read_tree(root, bounds.get(root)):
            yield dataclasses.replace(incoming, path=str(root / (incoming.path or "")))


def _file_chunks(path: Path | None) -> Iterator[bytes]:
    stream = sys.stdin.buffer if path is None else path.open("rb")
    try:
        while chunk := stream.read(CHUNK):
            yield chunk
    finally:
        if path is not None:
            stream.close()


def _import(
    settings: Settings,
    params: ImportParams,
    source: _Source,
    show: Callable[[Problem], None] | None,
) -> ImportResult:
    result: ImportResult
    with progress("importing", source.total, show is not None) as advance:
        if settings.remote:
            client = remote_client(settings)
            try:
                if source.chunks is None:
                    result = _remote_tree(client, params, source.records, advance)
                else:
                    result = client.import_chunks(params, _advancing(source.chunks, advance))
            finally:
                client.close()
            if show is not None:  # the server's problems, as a local import prints them
                for problem in result.problems:
                    show(problem)
            return result
        from lorestore.composition import build_service

        service = build_service(settings)
        try:
            if source.chunks is None:
                records = _counting(source.records, advance)
            else:
                records = read_records(_advancing(source.chunks, advance))
            return service.memory_import(the_actor(settings), params, records, show)
        finally:
            service.store.close()


def _advancing(chunks: Iterator[bytes], advance: Advance) -> Iterator[bytes]:
    for chunk in chunks:
        advance(len(chunk))
        yield chunk


def _counting(records: Iterable[Incoming], advance: Advance) -> Iterator[Incoming]:
    for record in records:
        advance(1)
        yield record


def _remote_tree(
    client: Any, params: ImportParams, records: Iterator[Incoming], advance: Advance
) -> ImportResult:
    """A LoreKit tree sent to a server: each file as a line; the server's line numbers are
    turned back into file paths, and files that are not lessons are reported from here."""
    paths: list[str | None] = []
    local: list[Problem] = []

    def lines() -> Iterator[bytes]:
        for incoming in _counting(records, advance):
            if incoming.record is None:
                local.append(
                    Problem(
                        path=incoming.path,
                        code="invalid_record",
                        message=incoming.error or "not a lesson file",
                    )
                )
                continue
            paths.append(incoming.path)
            yield encode(incoming.record)

    result: ImportResult = client.import_chunks(params, lines())
    problems = [
        p.model_copy(update={"path": paths[p.line - 1], "line": None})
        if p.line and p.line <= len(paths)
        else p
        for p in result.problems
    ]
    return result.model_copy(
        update={
            "read": result.read + len(local),
            "invalid": result.invalid + len(local),
            "problems": local + problems,
            "problems_total": result.problems_total + len(local),
        }
    )


class _ProblemPrinter:
    """Prints problems as they are found, the first ``PER_CODE`` of each code; of a code
    that repeats beyond that (a cap reached: every later lesson refused alike), it counts the
    rest and says so at the end, with the fix where there is one."""

    PER_CODE = 20
    FIXES: ClassVar[dict[str, str]] = {"cap_exceeded": CAP_HINT}

    def __init__(self) -> None:
        self._console = err_console()
        self._seen: Counter[str] = Counter()
        self._fixes: dict[str, None] = {}  # the hints to print, in order, once each

    def __call__(self, problem: Problem) -> None:
        from rich.markup import escape

        self._seen[problem.code] += 1
        if problem.code in self.FIXES:
            # A problem keeps the message, not the details: the byte cap's names bytes.
            bytes_cap = problem.code == "cap_exceeded" and "bytes" in problem.message
            fix = BYTES_CAP_HINT if bytes_cap else self.FIXES[problem.code]
            self._fixes[fix] = None
        if self._seen[problem.code] > self.PER_CODE:
            return
        where = f"line {problem.line}" if problem.line else (problem.path or "")
        what = " / ".join(x for x in (problem.scope, problem.key) if x)
        self._console.print(
            f"[yellow]{problem.code}[/] {escape(where)} {escape(what)}: {escape(problem.message)}",
            highlight=False,
        )

    def summarise(self) -> None:
        from rich.markup import escape

        for code, count in self._seen.items():
            if count > self.PER_CODE:
                self._console.print(
                    f"[yellow]{code}[/]: {count - self.PER_CODE} more not shown ({count} in "
                    f"all; --json lists the first {LISTED:,} problems)",
                    highlight=False,
                )
        for fix in self._fixes:
            self._console.print(f"[dim]hint:[/] {escape(fix)}", highlight=False)


def _render_result(console: Console, result: ImportResult) -> None:
    from rich.table import Table

    verb = "would add" if result.dry_run else "added"
    table = Table(title=f"import ({result.format}{', dry run' if result.dry_run else ''})")
    for column in ("records", verb, "unchanged", "differs", "refused"):
        table.add_column(column, justify="left" if column == "records" else "right")
    rows = {"lessons": result.lessons, "tombstones": result.tombstones}
    rows |= {"scope policies": result.scope_policies, "unknown types": result.unknown}
    for name, o in rows.items():
        table.add_row(name, *(str(n) for n in (o.added, o.unchanged, o.differs, o.refused)))
    console.print(table)
    console.print(
        f"read {result.read}, invalid {result.invalid}, problems {result.problems_total}"
        + (" (dry run: nothing was written)" if result.dry_run else ""),
        highlight=False,
    )
