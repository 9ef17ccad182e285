"""The dashboard's state-changing forms (POST): one URL per action, each a catalog operation
run as the signed-in principal. The guard has checked the session and its CSRF token; the
service decides whether this principal may act (a write token's forged review is refused
there, 403). After a review the browser is sent back to the queue with the outcome named."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

from starlette.datastructures import FormData
from starlette.responses import RedirectResponse, Response

from lorestore.core.errors import LorestoreError
from lorestore.web.app import Context
from lorestore.web.pages import admin


def _text(form: FormData, name: str) -> str | None:
    value = str(form.get(name, "")).strip()
    return value or None


def _back(path: str, done: str, what: str) -> Response:
    return RedirectResponse(f"{path}?{urlencode({'done': done, 'what': what})}", status_code=303)


def _review(operation: str, done: str, **fixed: Any) -> Callable[[Context], Awaitable[Response]]:
    """A review action on the lesson the form names (scope, key), with its reason or note."""

    async def action(ctx: Context) -> Response:
        form = await ctx.request.form()
        scope, key = _text(form, "scope") or "", _text(form, "key") or ""
        words = {"reason": _text(form, "reason")} if operation == "memory_reject" else {}
        if operation == "memory_verify":
            words = {"note": _text(form, "reason") or _text(form, "note")}
        if operation == "memory_reject" and not words["reason"]:
            raise LorestoreError(
                "invalid_argument",
                "a rejection needs a reason",
                hint="say why in the reason field; whoever writes the value again is shown it",
            )
        await ctx.call(operation, scope=scope, key=key, **words, **fixed)
        return _back(_text(form, "back") or "/review", done, f"{scope} / {key}")

    return action


async def audit_verify(ctx: Context) -> Response:
    """Start verifying the hash chains the session's token may read, in the background
    (web/chains.py); the audit page shows it running, then its result."""
    ctx.dashboard.chain_checks.start(ctx.session.token_hash, ctx.bound("audit_verify"))
    return RedirectResponse("/audit", status_code=303)


async def token_create(ctx: Context) -> Response:
    form = await ctx.request.form()
    scopes = [s.strip() for s in str(form.get("scopes", "")).split(",") if s.strip()]
    days = _text(form, "expires_days")
    created = await ctx.call(
        "token_create",
        name=_text(form, "name") or "",
        permission=_text(form, "permission") or "read",
        scopes=scopes or None,
        expires_days=int(days) if days and days.isdigit() else days,
    )
    return await admin(ctx, created=created)  # the secret, shown on this answer only


async def token_revoke(ctx: Context) -> Response:
    form = await ctx.request.form()
    info = await ctx.call("token_revoke", id=_text(form, "id") or "")
    return _back("/admin", "token-revoked", f"{info.name} ({info.prefix}…)")


async def org_create(ctx: Context) -> Response:
    form = await ctx.request.form()
    info = await ctx.call("org_create", slug=_text(form, "slug") or "", name=_text(form, "name"))
    return _back("/admin", "org-created", info.org)


async def org_invite(ctx: Context) -> Response:
    form = await ctx.request.form()
    invite = await ctx.call(
        "org_invite",
        org=_text(form, "org") or "",
        user=_text(form, "user") or "",
        role=_text(form, "role") or "member",
    )
    return await admin(ctx, invite=invite)  # the code, shown on this answer only


async def org_invite_revoke(ctx: Context) -> Response:
    form = await ctx.request.form()
    org = _text(form, "org") or ""
    await ctx.call("org_invite_revoke", org=org, id=_text(form, "id") or "")
    return _back("/admin", "invite-revoked", org)


async def org_remove(ctx: Context) -> Response:
    form = await ctx.request.form()
    org, user = _text(form, "org") or "", _text(form, "user") or ""
    await ctx.call("org_remove", org=org, user=user)
    return _back("/admin", "member-removed", f"{user} from {org}")


def _binding(operation: str, done: str) -> Callable[[Context], Awaitable[Response]]:
    async def action(ctx: Context) -> Response:
        form = await ctx.request.form()
        result = await ctx.call(
            operation, org=_text(form, "org") or "", pattern=_text(form, "pattern") or ""
        )
        pending = " (pending the operator's approval)" if result.pending else ""
        return _back("/admin", done, f"{result.pattern} to {result.org}{pending}")

    return action


async def policy_set(ctx: Context) -> Response:
    form = await ctx.request.form()
    review = _text(form, "require_review")
    result = await ctx.call(
        "memory_policy",
        scope=_text(form, "scope") or "",
        revision_policy=_text(form, "revision_policy"),
        require_review=None if review is None else review == "on",
    )
    return _back("/admin", "policy-set", result.scope)


ACTIONS: dict[str, Callable[[Context], Awaitable[Response]]] = {
    "/review/verify": _review("memory_verify", "verified"),
    "/review/reject": _review("memory_reject", "rejected"),
    "/review/accept-revision": _review("memory_verify", "revision-accepted", revision=True),
    "/review/reject-revision": _review("memory_reject", "revision-rejected", revision=True),
    "/review/dismiss-dispute": _review("memory_verify", "dispute-dismissed"),
    "/audit/verify": audit_verify,
    "/admin/tokens/create": token_create,
    "/admin/tokens/revoke": token_revoke,
    "/admin/orgs/create": org_create,
    "/admin/orgs/invite": org_invite,
    "/admin/orgs/invite-revoke": org_invite_revoke,
    "/admin/orgs/remove": org_remove,
    "/admin/orgs/bind": _binding("org_bind", "bound"),
    "/admin/orgs/unbind": _binding("org_unbind", "unbound"),
    "/admin/policy": policy_set,
}
