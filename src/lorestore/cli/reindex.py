"""``lorestore reindex``: embed the stored lessons that have no vector of the model in use,
or another model's (after installing the extra ``lorestore[semantic]``, an upgrade of its
model, or an import by a process without it). Idempotent: a second run embeds nothing. Works
on a database directly, as the other operator commands do (every tenant: a superuser URL on
PostgreSQL)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from lorestore.cli.db import _DATABASE_URL_HELP, _operator_store
from lorestore.cli.render import failure, make_console
from lorestore.core.errors import LorestoreError

if TYPE_CHECKING:
    from lorestore.storage.protocol import Store

# Lessons embedded per transaction: the model embeds a thousand short texts in tens of
# milliseconds, and each batch commits on its own, so an interrupted run keeps what it did.
BATCH = 1000


def reindex_command(
    database_url: Annotated[
        str | None, typer.Option("--database-url", help=_DATABASE_URL_HELP, metavar="URL")
    ] = None,
    batch: Annotated[
        int, typer.Option("--batch", help="lessons per transaction", min=1, max=100_000)
    ] = BATCH,
    json_output: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Embed the lessons that lack a vector of the semantic model in use (or carry another
    model's), for hybrid retrieval. Needs the extra: pip install 'lorestore\\[semantic]'."""
    try:
        store, warning = _store(database_url)
    except LorestoreError as error:
        raise failure(error, json_output) from None
    try:
        result = _reindex(store, batch, show_progress=not json_output)
    except LorestoreError as error:
        raise failure(error, json_output) from None
    finally:
        store.close()
    if warning:
        result["warning"] = warning
    if json_output:
        print(json.dumps(result))
        return
    make_console().print(
        f"embedded {result['embedded']} lessons with {result['model']} "
        f"({result['per_second']:.0f} lessons/s); {result['remaining']} left"
    )


def _store(database_url: str | None) -> tuple[Store, str | None]:
    from lorestore.config import load_settings
    from lorestore.semantic.model import availability

    state = availability(load_settings(use_login=False).semantic)
    if not state.installed:
        raise LorestoreError(
            "config_error",
            f"reindex needs hybrid retrieval, and it is off here: {state.reason}",
            hint="pip install 'lorestore[semantic]' and unset LORESTORE_SEMANTIC (or set it on)",
        )
    store, warning = _operator_store(database_url, "reindex")
    return store, warning


def _reindex(store: Store, batch: int, *, show_progress: bool) -> dict[str, Any]:
    from rich.progress import Progress

    with store.transaction(write=False) as tx:
        total = tx.count_lessons_to_embed()
        model = tx.retrieval_model()
    embedded, after = 0, 0
    started = time.perf_counter()
    with Progress(console=make_console(stderr=True), disable=not show_progress) as progress:
        task = progress.add_task("embedding lessons", total=total)
        while True:
            with store.transaction(write=True) as tx:
                done, after = tx.embed_page(after, batch)
            if done == 0:
                break
            embedded += done
            progress.advance(task, done)
    seconds = time.perf_counter() - started
    with store.transaction(write=False) as tx:
        remaining = tx.count_lessons_to_embed()
        problem = tx.retrieval_problem()
    if problem is not None:
        raise LorestoreError(
            "config_error",
            f"{problem}: {remaining} lessons left without a vector",
            hint="reinstall the extra (pip install --force-reinstall 'lorestore[semantic]'); "
            "`lorestore doctor --deep` loads the model",
        )
    return {
        "model": model,
        "embedded": embedded,
        "remaining": remaining,
        "seconds": round(seconds, 3),
        "per_second": round(embedded / seconds, 1) if seconds > 0 else 0.0,
    }
