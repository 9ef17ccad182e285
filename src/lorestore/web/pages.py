"""The dashboard's pages (GET, bookmarkable: every filter is in the URL). Each reads through
catalog operations as the signed-in principal (``Context.call``); nothing here reads the
store directly."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from starlette.responses import Response

from lorestore.core.errors import LorestoreError
from lorestore.core.scope import parse_scope
from lorestore.core.timestamps import format_ts
from lorestore.web.app import Context
from lorestore.web.render import Series, day_chart, side_by_side

CHART_DAYS = 14
# The overview counts the review queue up to this many (the queue's query costs more the more
# it returns); past it the page says "50+" and the queue page lists them.
QUEUE_COUNTED = 50
RECALL_DAYS = 30  # a lesson's recent recalls: the recall log's default retention
# Lessons a Lessons page shows: a page of a listing, or a search's best matches.
PAGE_SIZE = 50
NOTICES = {
    "verified": "Verified",
    "rejected": "Rejected",
    "revision-accepted": "Accepted the proposed revision of",
    "revision-rejected": "Rejected the proposed revision of",
    "dispute-dismissed": "Dismissed the dispute of (verified again)",
    "token-revoked": "Revoked token",
    "org-created": "Created org",
    "invite-revoked": "Revoked invite",
    "member-removed": "Removed member",
    "bound": "Bound scope pattern",
    "unbound": "Unbound scope pattern",
    "policy-set": "Set the policy of",
}


def notice(ctx: Context) -> str | None:
    """The one-line outcome of the action that redirected here (fixed words + the subject)."""
    query = ctx.request.query_params
    words = NOTICES.get(query.get("done", ""))
    return f"{words} {query.get('what', '')}".strip() if words else None


async def overview(ctx: Context) -> Response:
    scopes = (await ctx.call("memory_scopes")).scopes
    queue = (await ctx.call("memory_review_queue", limit=QUEUE_COUNTED)).items
    days = (await ctx.call("memory_activity", days=CHART_DAYS)).days
    recent = (await ctx.call("memory_audit", limit=15)).events
    chart = day_chart(
        [d.day for d in days],
        [
            Series("writes", "writes", [d.writes for d in days]),
            Series("recalls", "recalls", [d.recalls for d in days]),
            Series("lessons held by recalls", "held", [d.held for d in days]),
            Series("reviews", "reviews", [d.reviews for d in days]),
        ],
    )
    trust: Counter[str] = Counter()
    for inventory in scopes:
        trust.update(inventory.trust)
    return ctx.page(
        "overview.html",
        scopes=scopes,
        queue=Counter(item.reason for item in queue),
        queue_total=f"{len(queue)}+" if len(queue) == QUEUE_COUNTED else str(len(queue)),
        trust=trust,
        recent=recent,
        chart=chart,
    )


async def lessons(ctx: Context) -> Response:
    """A scope, or every scope under a prefix, filtered and paged by memory_list; with words,
    the best matches of memory_search in those scopes instead (ranked, one page of them)."""
    query = ctx.request.query_params
    form = {name: query.get(name, "").strip() for name in ("scope", "tags", "q", "trust")}
    form["state"] = query.get("state") or "active"
    form["sort"] = query.get("sort") or "updated"
    tags = [t.strip() for t in form["tags"].split(",") if t.strip()] or None
    prefix = form["scope"].lower().rstrip("*")
    # The inventory (a count over every lesson) only where it is needed: the scopes a search
    # runs in, and the list of scopes to choose from.
    scopes = (await ctx.call("memory_scopes")).scopes if form["q"] or not prefix else []
    found: list[Any] = []
    next_cursor = None
    if form["q"]:
        matching = sorted({s.scope for s in scopes if s.scope.startswith(prefix) and s.active})
        if matching:
            hits = await ctx.call(
                "memory_search", query=form["q"], scopes=matching, tags=tags, limit=PAGE_SIZE
            )
            found = [h.lesson for h in hits.hits if form["trust"] in ("", h.lesson.trust)]
    elif prefix:
        exact = _is_scope(prefix) and not form["scope"].endswith("*")
        page = await ctx.call(
            "memory_list",
            scope=prefix if exact else prefix + "*",
            tags=tags,
            trust=form["trust"] or None,
            state=form["state"],
            sort=form["sort"],
            limit=PAGE_SIZE,
            cursor=query.get("cursor") or None,
        )
        found, next_cursor = page.lessons, page.next_cursor
    return ctx.page(
        "lessons.html",
        scopes=scopes,
        form=form,
        lessons=found,
        next_cursor=next_cursor,
        page_size=PAGE_SIZE,
    )


def _is_scope(text: str) -> bool:
    """Whether the Lessons page's scope field holds a whole scope (else it is a prefix)."""
    try:
        parse_scope(text)
    except LorestoreError:
        return False
    return True


async def lesson(ctx: Context) -> Response:
    query = ctx.request.query_params
    scope, key = query.get("scope", ""), query.get("key", "")
    history = await ctx.call("memory_history", scope=scope, key=key)
    try:
        served = (await ctx.call("memory_read", scope=scope, key=key)).lesson
    except LorestoreError as error:
        if error.code != "not_found":
            raise
        served = None  # rejected, archived or expired: its history still shows
    versions = sorted(history.versions, key=lambda v: v.version)
    diffs = {
        v.version: side_by_side(versions[i - 1].value, v.value)
        for i, v in enumerate(versions)
        if i > 0
    }
    audit = (await ctx.call("memory_audit", scope=history.scope, key=history.key, limit=100)).events
    since = format_ts(ctx.dashboard.service.clock() - timedelta(days=RECALL_DAYS))
    recalls = await ctx.call("memory_recalls", since=since, lesson_id=history.lesson_id, limit=20)
    return ctx.page(
        "lesson.html",
        history=history,
        lesson=served,
        versions=list(reversed(versions)),
        diffs=diffs,
        audit=audit,
        recalls=recalls,
        recall_days=RECALL_DAYS,
    )


async def review(ctx: Context) -> Response:
    query = ctx.request.query_params
    items = (await ctx.call("memory_review_queue", scope=query.get("scope") or None)).items
    diffs = {
        item.lesson.id: side_by_side(item.lesson.value, item.proposed.value)
        for item in items
        if item.proposed is not None
    }
    return ctx.page("review.html", items=items, diffs=diffs, notice=notice(ctx))


async def recall(ctx: Context) -> Response:
    recall_id = ctx.request.query_params.get("id", "").strip()
    explained = await ctx.call("memory_explain", recall_id=recall_id) if recall_id else None
    return ctx.page("recall.html", recall_id=recall_id, explained=explained)


async def audit(ctx: Context) -> Response:
    query = ctx.request.query_params
    filters = {name: query.get(name) or None for name in ("scope", "key", "since", "until")}
    page = await ctx.call("memory_audit", limit=100, cursor=query.get("cursor") or None, **filters)
    # Verifying recomputes every chain from its first event (O(events)): asked for (a POST to
    # /audit/verify), run in the background, its latest run shown here (web/chains.py).
    return ctx.page(
        "audit.html",
        events=page.events,
        next_cursor=page.next_cursor,
        filters=filters,
        check=ctx.dashboard.chain_checks.latest(ctx.session.token_hash),
    )


async def admin(ctx: Context, created: Any = None, invite: Any = None) -> Response:
    if not ctx.can_admin:
        raise LorestoreError("forbidden", "the admin pages need a token with admin permission")
    tokens = (await ctx.call("token_list")).tokens
    orgs = []
    for org in (await ctx.call("org_list")).orgs:
        slug = org.org.removeprefix("org:")
        members = (await ctx.call("org_members", org=slug)).members
        invites = []
        if org.role in ("owner", "admin"):
            invites = (await ctx.call("org_invites", org=slug)).invites
        bindings = (await ctx.call("org_bindings", org=slug)).bindings
        orgs.append(
            {
                "slug": slug,
                "role": org.role,
                "members": members,
                "invites": invites,
                "bindings": bindings,
            }
        )
    policy = await ctx.call("memory_policy", scope="*")
    return ctx.page(
        "admin.html",
        tokens=tokens,
        orgs=orgs,
        policy=policy,
        created=created,
        invite=invite,
        notice=notice(ctx),
    )


async def admin_page(ctx: Context) -> Response:
    return await admin(ctx)


PAGES = {
    "/overview": overview,
    "/lessons": lessons,
    "/lesson": lesson,
    "/review": review,
    "/recall": recall,
    "/audit": audit,
    "/admin": admin_page,
}
