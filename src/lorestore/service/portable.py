"""``memory_export`` and ``memory_import``: bulk data in and out, streamed both ways.

Export reads what the actor may read (its own tenant and its orgs, narrowed by its token),
a page per short read transaction, ordered by stable ids so that a million records pass
through flat memory. Import validates every record, applies them a batch per transaction
(``service/importing.py``) and never overwrites what the store holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from functools import partial
from typing import Any

from lorestore.auth.actor import Actor
from lorestore.portable.exporter import Export, ExportFilter
from lorestore.portable.importer import ImportRun
from lorestore.portable.jsonl import Incoming, header
from lorestore.portable.models import ExportParams, ImportParams, ImportResult, Problem
from lorestore.portable.records import (
    foreign_line,
    lesson_line,
    policy_line,
    project_line,
    tombstone_line,
)
from lorestore.service.importing import ImportContext, ImportOperations

PAGE = 500


class PortableOperations(ImportOperations):
    def memory_export(self, actor: Actor, p: ExportParams) -> Export:
        """The export, validated now and read lazily: iterate ``pages`` or ``chunks()``."""
        self._require(actor, "read")
        now = self._now()
        selection = ExportFilter.of(p, actor, now)
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            owners = self._readable_owners(tx, actor)
        filters = p.model_dump(exclude_defaults=True, exclude={"format"})
        export = Export(header(now, **({"filters": filters} if filters else {})), iter(()))
        export.pages = self._export_pages(actor, owners, selection, p.history, export)
        return export

    def memory_import(
        self,
        actor: Actor,
        p: ImportParams,
        incoming: Iterable[Incoming],
        on_problem: Callable[[Problem], None] | None = None,
    ) -> ImportResult:
        """Import records as they are read; see docs/format.md for what lands and why."""
        self._require(actor, "write")
        context = ImportContext(actor, p.format, p.dry_run)
        run = ImportRun(p.format, p.dry_run, partial(self._import_batch, context), on_problem)
        # A dry run keeps nothing it writes: nothing to tune, and the file stays as it was.
        with nullcontext() if p.dry_run else self.store.bulk_load():
            return run.run(incoming)

    def _export_pages(
        self,
        actor: Actor,
        owners: list[str],
        selection: ExportFilter,
        history: bool,
        export: Export,
    ) -> Iterator[list[dict[str, Any]]]:
        # Tombstones before lessons: an importer that reads in order refuses a rejected value
        # before it meets a lesson carrying it.
        yield self._policies(actor, owners, selection, export)
        yield self._projects(actor, owners, selection, export)
        yield from self._tombstone_pages(actor, owners, selection, export)
        yield from self._lesson_pages(actor, owners, selection, history, export)
        if not selection.narrowed:
            yield from self._foreign_pages(actor, owners, selection, export)

    def _policies(
        self, actor: Actor, owners: list[str], selection: ExportFilter, export: Export
    ) -> list[dict[str, Any]]:
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            rows = tx.export_policies(owners)
        page = [
            policy_line(r)
            for r in rows
            if selection.scope_ok(r.policy.scope) and selection.time_ok(r.updated_at)
        ]
        export.counts["scope_policy"] += len(page)
        return page

    def _projects(
        self, actor: Actor, owners: list[str], selection: ExportFilter, export: Export
    ) -> list[dict[str, Any]]:
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            rows = tx.project_repos(owners)
        page = [
            project_line(r)
            for r in rows
            if selection.scope_ok(f"project::{r.project}") and selection.time_ok(r.added_at)
        ]
        export.counts["project"] += len(page)
        return page

    def _tombstone_pages(
        self, actor: Actor, owners: list[str], selection: ExportFilter, export: Export
    ) -> Iterator[list[dict[str, Any]]]:
        after: str | None = None
        while True:
            with self.store.transaction(write=False, actor=actor.principal) as tx:
                rows = tx.export_tombstones(owners, after, PAGE)
            if not rows:
                return
            after = rows[-1].id
            page = [
                tombstone_line(t)
                for t in rows
                if selection.scope_ok(t.scope) and selection.time_ok(t.created_at)
            ]
            export.counts["tombstone"] += len(page)
            yield page

    def _lesson_pages(
        self,
        actor: Actor,
        owners: list[str],
        selection: ExportFilter,
        history: bool,
        export: Export,
    ) -> Iterator[list[dict[str, Any]]]:
        after: str | None = None
        while True:
            with self.store.transaction(write=False, actor=actor.principal) as tx:
                rows = tx.export_lessons(owners, after, PAGE)
                chosen = [r for r in rows if selection.lesson_ok(r.lesson)]
                if not selection.reviewer:
                    # A rejected lesson's text is for reviewers, as in memory_history.
                    export.withheld["rejected_needs_review"] += sum(
                        r.lesson.trust == "rejected" for r in chosen
                    )
                    chosen = [r for r in chosen if r.lesson.trust != "rejected"]
                versions = tx.versions_of([r.pk for r in chosen]) if history and chosen else {}
            if not rows:
                return
            after = rows[-1].lesson.id
            page = [lesson_line(r.lesson, versions.get(r.pk) if history else None) for r in chosen]
            export.counts["lesson"] += len(page)
            yield page

    def _foreign_pages(
        self, actor: Actor, owners: list[str], selection: ExportFilter, export: Export
    ) -> Iterator[list[dict[str, Any]]]:
        after: tuple[str, str] | None = None
        while True:
            with self.store.transaction(write=False, actor=actor.principal) as tx:
                rows = tx.export_foreign(owners, after, PAGE)
            if not rows:
                return
            after = (rows[-1].owner, rows[-1].digest)
            page = [foreign_line(r) for r in rows if selection.scope_ok(r.scope)]
            export.counts["unknown"] += len(page)
            yield page
