"""LoreKit's memory operations, each a thin adapter over lorestore's own service operation, run
as the caller's actor: tenancy, tombstones, trust, audit, caps and rate limits all come from
the service. The REST routes and the MCP tools of the mount both call these, then shape the
answer the way their LoreKit counterpart does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from lorestore.auth.actor import Actor
from lorestore.core.errors import LorestoreError
from lorestore.core.scope import parse_scope
from lorestore.models import (
    ChangeParams,
    DeleteParams,
    ListParams,
    NoParams,
    OrgCreateParams,
    Params,
    PurgeParams,
    ReadParams,
    SearchParams,
)
from lorestore.service import LessonService
from lorestore.transports.lorekit.fields import (
    MemoryAddress,
    MemoryDelete,
    MemoryList,
    MemoryPurge,
    MemorySearch,
    MemoryWrite,
    OrgCreate,
    entry,
    write_params,
)

ParamsT = TypeVar("ParamsT", bound=Params)
# How many pages of lorestore's list a filtered LoreKit page may read before it answers with
# what it found and a cursor: a filter that matches little stays bounded per request.
MAX_PAGES = 20


@dataclass(frozen=True, slots=True)
class Page:
    entries: list[dict[str, Any]]
    has_more: bool
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class Written:
    created: bool
    entry: dict[str, Any]
    proposed: bool  # a new value for a verified lesson: kept for review, the old one served


@dataclass(frozen=True, slots=True)
class LoreKitOperations:
    service: LessonService

    def write(self, actor: Actor, body: MemoryWrite) -> Written:
        result = self.service.memory_write(actor, write_params(body))
        created, proposed = result.result == "created", result.result == "proposed"
        return Written(created, entry(result.lesson), proposed)

    def read(self, actor: Actor, body: MemoryAddress) -> dict[str, Any] | None:
        params = ReadParams.model_validate({"scope": body.scope, "key": body.key})
        try:
            return entry(self.service.memory_read(actor, params).lesson)
        except LorestoreError as error:
            if error.code == "not_found":
                return None
            raise

    def list_page(self, actor: Actor, query: MemoryList) -> Page:
        """One scope, newest first. ``key`` is an exact read; LoreKit's other filters (several
        tags matching any, kind, host, creation window, key prefix) are applied to lorestore's
        pages, each read whole so that its cursor stays exact."""
        if query.scope is None:
            # LoreKit lists every scope when none is named; lorestore never reads "all"
            # (DESIGN §1). The caller's read permission is still checked: this is doctor's
            # authentication probe, which a 2xx passes.
            self.service.memory_scopes(actor, NoParams())
            return Page([], False, None)
        if query.key is not None:
            found = self.read(actor, MemoryAddress(scope=query.scope, key=query.key))
            return Page([found] if found and _keep(query, found) else [], False, None)
        tags = query.tags if query.tags and len(query.tags) == 1 else None  # all == any
        entries: list[dict[str, Any]] = []
        cursor = query.cursor
        for _ in range(MAX_PAGES):
            params = ListParams.model_validate(
                {
                    "scope": query.scope,
                    "tags": tags,
                    "limit": query.limit - len(entries),
                    "cursor": cursor,
                }
            )
            page = self.service.memory_list(actor, params)
            entries += [e for e in map(entry, page.lessons) if _keep(query, e)]
            cursor = page.next_cursor
            if cursor is None or len(entries) >= query.limit:
                break
        return Page(entries, cursor is not None, cursor)

    def search(self, actor: Actor, body: MemorySearch) -> list[dict[str, Any]]:
        if body.cursor is not None:
            raise LorestoreError(
                "invalid_cursor",
                "lorestore answers a search in one page and issues no search cursor",
                hint="search again without a cursor, with a larger limit (at most 100)",
            )
        if not body.scopes:
            raise LorestoreError(
                "invalid_scope",
                "name the scopes to search: lorestore never searches every scope at once",
                hint='send "scopes", e.g. ["repo::acme/app", "global"]',
            )
        # LoreKit's hooks join words with " OR " (websearch syntax); lorestore's search
        # already matches any word and ranks by BM25, and drops "or" as a stop word.
        scopes = self._with_projects(actor, body.scopes)
        params = SearchParams.model_validate(
            {"query": body.q, "scopes": scopes, "tags": body.tags, "limit": body.limit}
        )
        hits = self.service.memory_search(actor, params).hits
        return [{**entry(h.lesson), "rank": h.score} for h in hits]

    def _with_projects(self, actor: Actor, scopes: list[str]) -> list[str]:
        """The scopes a LoreKit client searches, and the project rungs declared to hold its
        repositories (`lorestore project add`): its client names only the project its own
        configuration knows, if any."""
        ladder = [parse_scope(s) for s in scopes if s.startswith(("repo::", "branch::"))]
        repos = {scope.repo for scope in ladder if scope.repo}
        if not repos:
            return scopes
        declared = self.service.project_list(actor, NoParams()).projects
        derived = [p.scope for p in declared if repos & set(p.repos)]
        return list(dict.fromkeys([*scopes, *derived]))

    def archive(self, actor: Actor, body: MemoryAddress) -> None:
        self.service.memory_archive(actor, _address(ChangeParams, body))

    def delete(self, actor: Actor, body: MemoryDelete) -> None:
        """LoreKit's delete archives unless ``force``: then it erases, a lorestore admin's
        call (an agent's write token is refused, and told to archive instead)."""
        if body.org is not None:
            raise LorestoreError(
                "invalid_argument",
                "lorestore finds a lesson's org from its scope's binding; drop org",
            )
        if not body.force:
            self.archive(actor, body)
            return
        self.service.memory_delete(actor, _address(DeleteParams, body))

    def restore(self, actor: Actor, body: MemoryAddress) -> None:
        self.service.memory_restore(actor, _address(ChangeParams, body))

    def scopes(self, actor: Actor) -> list[dict[str, Any]]:
        """Active lessons per scope, summed over the owners the caller reads (a scope may be
        the caller's own and an org's)."""
        counts: dict[str, int] = {}
        for inventory in self.service.memory_scopes(actor, NoParams()).scopes:
            if inventory.active:
                counts[inventory.scope] = counts.get(inventory.scope, 0) + inventory.active
        ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return [{"scope": scope, "count": count} for scope, count in ordered]

    def purge(self, actor: Actor, body: MemoryPurge) -> int:
        params = PurgeParams(retention_days=body.retention_days)
        return self.service.memory_purge(actor, params).purged

    def purge_expired(self, actor: Actor) -> int:
        return self.service.memory_purge_expired(actor, NoParams()).purged

    def org_list(self, actor: Actor) -> list[dict[str, Any]]:
        orgs = self.service.org_list(actor, NoParams()).orgs
        return [_org(o.org, o.role) for o in orgs]

    def org_create(self, actor: Actor, body: OrgCreate) -> dict[str, Any]:
        created = self.service.org_create(actor, OrgCreateParams(slug=body.slug, name=body.name))
        return _org(created.org, created.role) | {"name": body.name}


def _address(model: type[ParamsT], body: MemoryAddress) -> ParamsT:
    return model.model_validate({"scope": body.scope, "key": body.key})


def _org(org: str, role: str) -> dict[str, Any]:
    slug = org.removeprefix("org:")
    return {"id": slug, "slug": slug, "name": slug, "role": role, "created_at": None}


def _keep(query: MemoryList, found: dict[str, Any]) -> bool:
    """Whether an entry passes LoreKit's list filters (tags match any, as LoreKit's do)."""
    if query.tags and not set(t.lower() for t in query.tags) & set(found["tags"]):
        return False
    if query.kind and found["kind"] not in query.kind:
        return False
    if query.host and found["host"] not in query.host:
        return False
    if query.key_prefix and not found["key"].startswith(query.key_prefix):
        return False
    if query.created_since and found["created_at"] < query.created_since:
        return False
    return not (query.created_until and found["created_at"] >= query.created_until)
