"""``memory_search``: full-text search over named scopes or the ladder of a context, with
recall's eligibility applied to an agent's search.

Search serves what a person asks for, but agents call it too: for an agent (a read or write
token, the stdio server) the lessons recall would hold back (disputed, unreviewed under
``require_review``, shadowed by a narrower lesson of the same key, held by the revision
policy, duplicates) are withheld unless it asks for them with ``include_held``. A person's
search (review or admin) shows everything, each hit labelled with its trust and the reasons
recall would hold it. The rules are recall's own (``core.recall.eligibility``), decided on
the ladder of the context; a named scope off that ladder is decided on its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from lorestore.auth.actor import Actor
from lorestore.core.errors import LorestoreError
from lorestore.core.recall import (
    Candidate,
    LessonHead,
    ScopePolicy,
    eligibility,
    head_of,
    match_score,
    precedence,
    render_fence,
)
from lorestore.core.scope import ladder, parse_scope
from lorestore.core.search import query_terms
from lorestore.core.validation import validate_tags
from lorestore.models import SearchHitOut, SearchParams, SearchResult
from lorestore.service.base import bounded
from lorestore.service.recall import RecallOperations
from lorestore.service.recaller import trust_label
from lorestore.service.retrieval import hybrid_hits
from lorestore.storage.protocol import SearchHit, Transaction

MAX_FETCH = 100  # an agent's search reads more hits than it returns: some may be withheld
Rungs = dict[tuple[str, str], tuple[int, ScopePolicy]]


class SearchOperations(RecallOperations):
    def memory_search(self, actor: Actor, p: SearchParams) -> SearchResult:
        named = self._search_scopes(actor, p)
        tags = validate_tags(p.tags)
        limit = bounded("limit", p.limit, 1, 100)
        terms = query_terms(p.query)
        judged = not actor.can("review")  # an agent's search: recall's rules apply
        fetch = min(MAX_FETCH, limit * 4) if judged and not p.include_held else limit
        now = self._now()
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            has_context = bool(p.repo or p.branch or p.project)
            projects, rungs = self._ladder(tx, actor, p) if has_context else ([], [])
            on_ladder = self._rungs_of(tx, actor, rungs)
            addresses = list(on_ladder)
            if named:  # a named scope the actor may not read is refused, as ever
                bindings = tx.bindings_for(actor.principal)
                addresses = [
                    (self._owner_for(tx, actor, s, write=False, bindings=bindings), s)
                    for s in named
                ]
            found = tx.search(addresses, terms, tags=tags, now=now, limit=fetch)
            found = hybrid_hits(tx, addresses, p.query, found, tags=tags, now=now, limit=fetch)
            reasons, candidates = self._judge(tx, actor, found, addresses, on_ladder, p, now)
        hits = _ranked(found, candidates)
        served = [
            SearchHitOut(
                lesson=hit.lesson,
                score=hit.score,
                snippet=hit.snippet,
                label=trust_label(hit.lesson.trust),
                held=reasons[hit.lesson.id],
            )
            for hit in hits
            if not (judged and reasons[hit.lesson.id] and not p.include_held)
        ]
        fenced = [head_of(h.lesson) for h in served[:limit] if not h.held]
        return SearchResult(
            hits=served[:limit],
            scopes=named or rungs,
            projects=projects,
            withheld=len(hits) - len(served),
            text=render_fence(_search_id(p.query, fenced), fenced, kind="search"),
        )

    def _search_scopes(self, actor: Actor, p: SearchParams) -> list[str]:
        """The scopes named (normalised, each once), after the checks that need no store: a
        search names scopes or a context, a context forms a ladder, and the actor may read
        what it named."""
        has_context = bool(p.repo or p.branch or p.project)
        if not p.scopes and not has_context:
            raise LorestoreError(
                "invalid_scope",
                "search needs at least one scope, or a context to take the ladder of",
                hint="name one or more: lorestore search QUERY -s repo::acme/app -s global "
                '(over MCP or REST: "scopes": ["repo::acme/app", "global"]), or pass repo '
                "(in a git checkout the CLI and stdio server read it from git)",
            )
        if has_context:
            ladder(repo=p.repo, branch=p.branch, project=p.project)  # a bad context: refused
        named = list(dict.fromkeys(parse_scope(s).text for s in p.scopes or []))
        if named:
            self._authorise(actor, "read", *named)
        else:
            self._require(actor, "read")
        return named

    def _judge(
        self,
        tx: Transaction,
        actor: Actor,
        hits: Sequence[SearchHit],
        addresses: Sequence[tuple[str, str]],
        on_ladder: Rungs,
        p: SearchParams,
        now: str,
    ) -> tuple[dict[str, list[str]], dict[str, Candidate]]:
        """By lesson id, the reasons recall would hold each hit, and each hit as recall's
        candidate: decided together for the hits on the context's ladder (with the narrower
        lessons of the same key, which shadow them), and for each other scope on its own."""
        off_ladder = [a for a in addresses if a not in on_ladder]
        policies = {**self._rungs_of(tx, actor, [s for _, s in off_ladder]), **on_ladder}
        groups: dict[tuple[str, str] | None, list[Candidate]] = {}
        as_found: dict[str, Candidate] = {}
        for hit in hits:
            address = (hit.lesson.owner.key, hit.lesson.scope)
            rung, policy = policies.get(address, (0, ScopePolicy()))
            where = None if address in on_ladder else address
            candidate = Candidate(head_of(hit.lesson), hit.value_digest, rung, hit.score, policy)
            as_found[hit.lesson.id] = candidate
            groups.setdefault(where, []).append(
                candidate if where is None else candidate._replace(rung=0)
            )
        groups[None] = groups.get(None, []) + self._shadowing(tx, groups.get(None, []), on_ladder)
        every = [c for members in groups.values() for c in members]
        blobs = self._blobs(every, p)
        decided: dict[str, list[str]] = {}
        for members in groups.values():
            reasons = eligibility(precedence(members), now=now, revision=p.revision, blobs=blobs)
            for c in members:
                decided.setdefault(c.lesson.id, reasons[id(c)])
        return decided, as_found

    @staticmethod
    def _shadowing(tx: Transaction, found: list[Candidate], on_ladder: Rungs) -> list[Candidate]:
        """The lessons at narrower rungs holding the key of a hit on the ladder: they shadow
        it (or not, if they do not stand) whether or not the query matched them. One read
        per narrower rung, for every key found further up."""
        seen = {c.lesson.id for c in found}
        extra: list[Candidate] = []
        for (owner, scope), (rung, policy) in on_ladder.items():
            keys = sorted({c.lesson.key for c in found if c.rung > rung})
            if not keys:
                continue
            for stored in tx.lessons_with_keys(owner, scope, keys):
                lesson = stored.lesson
                if lesson.id in seen or lesson.status != "active" or lesson.trust == "rejected":
                    continue
                seen.add(lesson.id)
                extra.append(Candidate(head_of(lesson), stored.value_digest, rung, 0.0, policy))
        return extra


def _ranked(hits: Sequence[SearchHit], candidates: dict[str, Candidate]) -> list[SearchHit]:
    """The hits in recall's order of relevance (``match_score``: the index's score relative
    to the best, with scope specificity and trust as a bounded boost); ties in the index's
    order."""
    best = max((c.relevance for c in candidates.values()), default=0.0)
    if best <= 0:
        return list(hits)
    return sorted(hits, key=lambda h: -match_score(candidates[h.lesson.id], best))


def _search_id(query: str, fenced: Sequence[LessonHead]) -> str:
    """The fence's id: the same search over the same lessons (by address and version, which
    survive a copy to another store) writes the same block."""
    text = "\n".join([query, *(f"{h.scope}\n{h.key}\n{h.version}" for h in fenced)])
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()
