"""``lorestore eval``: the retrieval eval of ``evals/`` on a fresh store per backend (a temporary
SQLite file; PostgreSQL in a throwaway database set up by ``init_database``), reported as a
table or as JSON. Exits 1 when any forbidden lesson was served or a floor was missed."""

from __future__ import annotations

import json
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from lorestore.cli.render import make_console
from lorestore.core.errors import LorestoreError

if TYPE_CHECKING:  # the eval's machinery is imported when it runs, not by every CLI start
    from psycopg import sql

    from lorestore.evaluation.cases import EvalSet
    from lorestore.evaluation.report import Run
    from lorestore.storage.protocol import Store

BACKENDS = ("sqlite", "postgres")


@contextmanager
def sqlite_store(*, semantic: bool = True) -> Iterator[Store]:
    from lorestore.composition import open_database

    with tempfile.TemporaryDirectory(prefix="lorestore-eval-") as tmp:
        store = open_database(f"sqlite:///{Path(tmp) / 'eval.db'}", semantic=semantic)
        try:
            yield store
        finally:
            store.close()


def _admin(url: str, statement: sql.Composed) -> None:
    import psycopg  # only a PostgreSQL run pays for the driver (not every CLI start)

    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(statement)
    except psycopg.Error as exc:
        raise LorestoreError("config_error", f"PostgreSQL refused the eval: {exc}") from exc


@contextmanager
def postgres_store(admin_url: str, *, semantic: bool = True) -> Iterator[Store]:
    """A throwaway database on the server of ``admin_url`` (a superuser, as for the test
    suite), migrated by ``init_database`` and used as the application role; dropped after."""
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from lorestore.composition import open_database
    from lorestore.storage.postgres.setup import init_database

    name = f"lorestore_eval_{uuid.uuid4().hex[:12]}"
    _admin(admin_url, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        params = conninfo_to_dict(admin_url)
        params["dbname"] = name
        setup = init_database(make_conninfo("", **params))
        store = open_database(setup.app_url, pool_size=4, semantic=semantic)
        try:
            yield store
        finally:
            store.close()
    finally:
        _admin(
            admin_url,
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)),
        )


@contextmanager
def fresh_store(
    backend: str, database_url: str | None, *, semantic: bool = True
) -> Iterator[Store]:
    if backend == "sqlite":
        with sqlite_store(semantic=semantic) as store:
            yield store
        return
    if not database_url:
        raise LorestoreError(
            "invalid_argument",
            "the postgres backend needs --database-url",
            hint="pass an admin URL, e.g. postgresql://postgres@127.0.0.1:5432/postgres",
        )
    with postgres_store(database_url, semantic=semantic) as store:
        yield store


def evaluate(
    evalset: EvalSet, backends: list[str], database_url: str | None, *, semantic: bool = True
) -> list[Run]:
    """Run the set on each backend, each time into a fresh, empty store; ``semantic``: hybrid
    retrieval when the extra is installed, else lexical only."""
    from lorestore.evaluation.report import split_runs
    from lorestore.evaluation.runner import run_eval

    runs: list[Run] = []
    for backend in backends:
        with fresh_store(backend, database_url, semantic=semantic) as store:
            _, outcomes = run_eval(store, evalset)
        runs += split_runs(backend, outcomes)
    return runs


def _backends(chosen: list[str] | None, database_url: str | None) -> list[str]:
    backends = chosen or (["sqlite", "postgres"] if database_url else ["sqlite"])
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown:
        raise LorestoreError(
            "invalid_argument",
            f"unknown backend {unknown[0]!r}",
            hint="use --backend sqlite and/or --backend postgres",
        )
    return list(dict.fromkeys(backends))


def eval_set_folder(given: Path | None) -> Path:
    """The eval set to run: ``given``; else ./evals; else the evals/ of the source checkout
    this lorestore runs from (an editable install, ``make eval``), so that the command works
    from any folder. The set is part of lorestore's source, not of an installed wheel."""
    if given is not None:
        return given
    here = Path("evals")
    checkout = Path(__file__).resolve().parents[3] / "evals"
    if not (here / "setup.json").exists() and (checkout / "setup.json").exists():
        return checkout
    return here


def _load(data: Path, categories: list[str], ids: list[str]) -> EvalSet:
    from pydantic import ValidationError

    from lorestore.evaluation.cases import load_set

    try:
        evalset = load_set(data)
    except (OSError, ValueError, ValidationError) as exc:
        raise LorestoreError(
            "invalid_argument",
            f"cannot read the eval set in {data}: {exc}",
            hint="the eval set is the evals/ folder of lorestore's source checkout (an "
            "installed package does not carry it): pass --data /path/to/lorestore/evals",
        ) from exc
    chosen = evalset.only(categories=categories, ids=ids)
    if not chosen.queries:
        raise LorestoreError("invalid_argument", "no query matches --category / --query")
    return chosen


def eval_command(
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            help="the eval set directory (default: ./evals, else the evals/ of the lorestore "
            "checkout this command runs from)",
            metavar="DIR",
        ),
    ] = None,
    backend: Annotated[
        list[str] | None,
        typer.Option(
            "--backend",
            help="sqlite or postgres; repeat for both (default: sqlite, and postgres when "
            "--database-url is given)",
        ),
    ] = None,
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url",
            help="an admin URL of a PostgreSQL server; the eval creates a throwaway database "
            "there, runs as lorestore_app and drops it afterwards",
            metavar="URL",
        ),
    ] = None,
    category: Annotated[
        list[str] | None, typer.Option("--category", help="only queries of this category")
    ] = None,
    query: Annotated[list[str] | None, typer.Option("--query", help="only this query id")] = None,
    min_recall: Annotated[
        float | None, typer.Option("--min-recall", help="fail when recall@5 is below this")
    ] = None,
    min_mrr: Annotated[
        float | None, typer.Option("--min-mrr", help="fail when MRR is below this")
    ] = None,
    show_misses: Annotated[
        bool, typer.Option("--show-misses", help="list queries not answered at rank 1")
    ] = False,
    lexical: Annotated[
        bool,
        typer.Option(
            "--lexical",
            help="full-text retrieval only, as without the semantic extra (default: hybrid "
            "when lorestore\\[semantic] is installed)",
        ),
    ] = False,
    json_output: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """Measure retrieval on the committed eval set: recall@5, MRR, nDCG@10 and the
    forbidden-hit rate per backend, handler (memory_search, memory_recall) and category."""
    from lorestore.evaluation.report import forbidden_total, render, report, shortfalls

    try:
        for name, floor in (("--min-recall", min_recall), ("--min-mrr", min_mrr)):
            if floor is not None and not 0 <= floor <= 1:
                raise LorestoreError(
                    "invalid_argument",
                    f"{name} {floor} is not a fraction",
                    hint=f"a floor between 0 and 1, e.g. {name} 0.8",
                )
        evalset = _load(eval_set_folder(data), category or [], query or [])
        runs = evaluate(
            evalset, _backends(backend, database_url), database_url, semantic=not lexical
        )
    except LorestoreError as error:
        message = {"error": error.to_dict()} if json_output else None
        if message:
            print(json.dumps(message), file=sys.stderr)
        else:
            make_console(stderr=True).print(f"[red]error[/] [bold]{error.code}[/]: {error.message}")
        raise typer.Exit(2 if error.bad_input else 1) from None
    dataset = {
        "path": str(data),
        "lessons": len(evalset.lessons),
        "queries": len(evalset.queries),
    }
    missed = shortfalls(runs, min_recall=min_recall, min_mrr=min_mrr)
    if json_output:
        body = report(runs, dataset)
        # ok: what the exit status says (no forbidden hit and no figure below a floor asked for).
        body |= {"ok": bool(body["ok"]) and not missed, "shortfalls": missed}
        print(json.dumps(body, indent=2))
    else:
        console = make_console()
        render(console, runs, show_misses=show_misses)
        console.print(f"forbidden hits: {forbidden_total(runs)}")
        for line in missed:
            console.print(f"[red]below the floor[/] {line}")
    if forbidden_total(runs) or missed:
        raise typer.Exit(1)
