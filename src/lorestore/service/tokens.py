"""Token administration (create, list, revoke) and authentication of a presented token.

A token can only narrow its creator: a permission at most the creator's, scope patterns and
orgs that confine. Authentication fails closed: anything unexpected is ``unauthenticated``.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from lorestore.auth.actor import Actor
from lorestore.auth.tokens import (
    LOREKIT_PREFIXES,
    TOKEN_PREFIX,
    generate_token,
    hash_token,
    implied_permissions,
    looks_like_token,
)
from lorestore.core.errors import LorestoreError
from lorestore.core.owner import Owner
from lorestore.core.patterns import normalise_pattern, pattern_within
from lorestore.core.timestamps import format_ts
from lorestore.models import (
    NoParams,
    TokenCreateParams,
    TokenCreateResult,
    TokenCurrentResult,
    TokenInfo,
    TokenListResult,
    TokenRevokeParams,
)
from lorestore.service.base import ServiceBase, bounded
from lorestore.service.budget import granted, lease_size
from lorestore.storage.protocol import TokenRecord

TOUCH_INTERVAL = timedelta(minutes=1)


def _info(token: TokenRecord) -> TokenInfo:
    return TokenInfo(
        id=token.id,
        name=token.name,
        principal=token.principal,
        prefix=token.prefix,
        permission=token.permission,
        scopes=None if token.scopes is None else list(token.scopes),
        orgs=None if token.orgs is None else list(token.orgs),
        created_at=token.created_at,
        expires_at=token.expires_at,
        revoked_at=token.revoked_at,
        last_used_at=token.last_used_at,
    )


def _budget_unchecked(error: str) -> LorestoreError:
    """The store failed while counting a request: refused (never let through), and said to
    be the store's failure, not a rate limit a client would retry every second."""
    return LorestoreError(
        "storage_error",
        "the request budget could not be checked because the store failed, so the request "
        "is refused",
        hint="check the store (restart the server if its file was deleted or replaced)",
        details={"error": error},
    )


def _prefix(p: TokenCreateParams) -> str:
    """The token's prefix: lorestore's, or LoreKit's for the permission (an agent's only:
    LoreKit's clients live in agents' configuration files, where a person's token must not)."""
    if not p.lorekit:
        return TOKEN_PREFIX
    if p.permission not in LOREKIT_PREFIXES:
        raise LorestoreError(
            "invalid_argument",
            f"a LoreKit token is a read or write token, not {p.permission}",
            hint="use --permission write (lk_rw_) or read (lk_ro_); a person reviews with "
            "their own lorestore token",
        )
    return LOREKIT_PREFIXES[p.permission]


def _unauthenticated(message: str) -> LorestoreError:
    return LorestoreError(
        "unauthenticated",
        message,
        hint="send a valid token as `Authorization: Bearer <token>`; "
        "`lorestore token create` makes one",
    )


def _token_id(given: str, tokens: dict[str, TokenRecord]) -> str:
    """The id a revocation means: the id itself, or the one token id it begins (at least 8
    characters, as the token table shows them)."""
    if given in tokens or len(given) < 8:
        return given
    matches = [ident for ident in tokens if ident.startswith(given)]
    if len(matches) > 1:
        raise LorestoreError(
            "invalid_argument",
            f"{given!r} begins {len(matches)} token ids",
            hint="give more of the id: `lorestore token list --json` shows them whole",
        )
    return matches[0] if matches else given


class TokenOperations(ServiceBase):
    def token_create(self, actor: Actor, p: TokenCreateParams) -> TokenCreateResult:
        self._require(actor, "admin")  # a scope-confined token makes tokens within its scopes
        name = p.name.strip()
        if not name or len(name) > 100:
            raise LorestoreError("invalid_argument", "a token name is 1-100 characters")
        if not all(actor.can(perm) for perm in implied_permissions(p.permission)):
            raise LorestoreError("forbidden", "a token cannot carry more than its creator has")
        scopes = None
        if p.scopes is not None:
            if not p.scopes:
                raise LorestoreError(
                    "invalid_scope",
                    "an empty scope list would make a token that can reach nothing",
                    hint="omit scopes for an unrestricted token",
                )
            scopes = tuple(dict.fromkeys(normalise_pattern(s) for s in p.scopes))
        if actor.scopes is not None:  # a token confined to scopes makes tokens within them
            if scopes is None:
                scopes = actor.scopes
            elif not all(pattern_within(s, actor.scopes) for s in scopes):
                raise LorestoreError(
                    "forbidden",
                    "a token cannot reach scopes its creator's token does not",
                    hint=f"name only scopes within {', '.join(actor.scopes)}",
                    details={"token_scopes": list(actor.scopes)},
                )
        orgs = None
        if p.orgs is not None:
            orgs = tuple(dict.fromkeys(Owner.org(o.strip().lower()).name for o in p.orgs))
        if actor.orgs is not None:  # a token confined to orgs makes tokens confined to them
            allowed = tuple(Owner.parse(o).name for o in actor.orgs)
            if orgs is None:
                orgs = allowed
            elif not set(orgs) <= set(allowed):
                raise LorestoreError(
                    "forbidden",
                    "a token cannot reach orgs its creator's token does not",
                    hint=f"name only orgs among {', '.join(allowed)}",
                    details={"token_orgs": list(allowed)},
                )
        now = self.clock()
        expires_at = None
        if p.expires_days is not None:
            days = bounded("expires_days", p.expires_days, 1, 3650)
            expires_at = format_ts(now + timedelta(days=days))
        limit = actor.token_expires_at  # a token never makes one that outlives it
        if limit is not None and expires_at is None:
            expires_at = limit
        elif limit is not None and expires_at is not None and expires_at > limit:
            raise LorestoreError(
                "forbidden",
                f"a token cannot outlive its creator's token, which expires at {limit}",
                hint="ask for fewer expires_days, or omit them to expire with this token",
                details={"token_expires_at": limit},
            )
        secret = generate_token(_prefix(p))
        record = TokenRecord(
            id=str(uuid.uuid4()),
            principal=actor.principal,
            name=name,
            prefix=secret[:10],
            permission=p.permission,
            scopes=scopes,
            orgs=orgs,
            created_at=format_ts(now),
            created_by=actor.principal,
            expires_at=expires_at,
        )
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            tx.insert_token(record, hash_token(secret))
            detail = {  # what the token may do; never its secret or hash
                "token": record.id,
                "name": name,
                "permission": p.permission,
                "scopes": None if scopes is None else list(scopes),
                "orgs": None if orgs is None else list(orgs),
                "expires_at": expires_at,
            }
            self._audit(tx, actor, "token.create", None, owner=actor.principal, detail=detail)
        return TokenCreateResult(token=secret, info=_info(record))

    def token_list(self, actor: Actor, p: NoParams) -> TokenListResult:
        self._authorise(actor, "admin")
        self._unconfined(actor, "listing every token of your account")
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            tokens = tx.list_tokens(actor.principal)
        return TokenListResult(tokens=[_info(t) for t in tokens])

    def token_current(self, actor: Actor, p: NoParams) -> TokenCurrentResult:
        """Who this call acts as: any caller may ask (an agent learns its own rights, and
        ``lorestore mcp`` refuses to bridge with a person's token)."""
        token = None
        if actor.token_id is not None:
            with self.store.transaction(write=False, actor=actor.principal) as tx:
                mine = {t.id: t for t in tx.list_tokens(actor.principal)}
            token = _info(mine[actor.token_id]) if actor.token_id in mine else None
        held = next(p for p in ("admin", "review", "write", "read") if actor.can(p))
        return TokenCurrentResult(
            principal=actor.principal, permission=held, is_person=actor.is_person, token=token
        )

    def token_revoke(self, actor: Actor, p: TokenRevokeParams) -> TokenInfo:
        self._authorise(actor, "admin")
        self._unconfined(actor, "revoking a token of your account")
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            tokens = {t.id: t for t in tx.list_tokens(actor.principal)}
            ident = _token_id(p.id.strip().lower(), tokens)
            if not tx.revoke_token(actor.principal, ident, self._now()):
                raise LorestoreError(
                    "not_found",
                    f"no live token {p.id!r}",
                    hint="`lorestore token list --json` shows ids (the table shows their "
                    "first 8 characters, which are enough)",
                )
            tokens = {t.id: t for t in tx.list_tokens(actor.principal)}
            detail = {"token": ident, "name": tokens[ident].name}
            self._audit(tx, actor, "token.revoke", None, owner=actor.principal, detail=detail)
        return _info(tokens[ident])

    def _count_request(self, record: TokenRecord, now: datetime) -> None:
        """Record the use and enforce the per-token budget (``service/budget.py``: taken from
        the store in leases). Fails closed: when the count cannot be taken, the request is
        refused rather than let through."""
        window_start = now.replace(second=0, microsecond=0)
        window = format_ts(window_start)
        touch = record.last_used_at is None or record.last_used_at < format_ts(now - TOUCH_INTERVAL)
        limit = self.rate_limit
        leased = bool(limit) and self.leases.take(record.id, window)
        if not touch and (leased or not limit):
            return
        reserve = 0 if leased or not limit else lease_size(limit)
        try:
            with self.store.transaction(write=True, actor=record.principal) as tx:
                total = (
                    tx.count_request(record.id, record.principal, window, reserve) if reserve else 0
                )
                if touch:
                    tx.touch_token(record.id, format_ts(now))
        except LorestoreError as exc:
            if exc.code == "busy":
                raise  # a lock held elsewhere: retry
            raise _budget_unchecked(exc.message) from exc
        except Exception as exc:  # the store's own refusals included: never fail open
            raise _budget_unchecked(str(exc)) from exc
        if not reserve or not limit:
            return
        allowed = granted(reserve, total, limit)
        if allowed:
            self.leases.keep(record.id, window, allowed - 1)  # this request takes one
            return
        retry_after = max(1, int((window_start + timedelta(minutes=1) - now).total_seconds()))
        raise LorestoreError(
            "rate_limited",
            f"this token made more than {limit} requests this minute",
            hint=f"retry after {retry_after} s",
            details={"retry_after": retry_after, "limit": limit},
        )

    def authenticate(self, token: str, *, session: str | None = None) -> Actor:
        """The actor a presented bearer token stands for; ``unauthenticated`` otherwise."""
        if not looks_like_token(token):
            raise _unauthenticated("that is not a lorestore token")
        return self.authenticate_hash(hash_token(token), session=session)

    def authenticate_hash(self, token_hash: str, *, session: str | None = None) -> Actor:
        """``authenticate`` for a token known by its hash: the dashboard's sessions keep the
        hash, never the secret, and check the token again on every request (so a revoked or
        expired token ends its sessions at once)."""
        now = self.clock()
        # No actor yet: the lookup by the secret's hash is the one query that runs without,
        # and on every request of a server: a statement alone (one wait on PostgreSQL).
        with self.store.transaction(write=False, single=True) as tx:
            record = tx.token_by_hash(token_hash)
        if record is None:
            raise _unauthenticated("unknown token")
        if record.revoked_at is not None:
            raise _unauthenticated(f"this token was revoked at {record.revoked_at}")
        if record.expires_at is not None and record.expires_at <= format_ts(now):
            raise _unauthenticated(f"this token expired at {record.expires_at}")
        self._count_request(record, now)
        return Actor(
            principal=record.principal,
            owner=record.principal,
            permissions=implied_permissions(record.permission),
            session=session or f"token-{record.id}",
            agent=record.name,
            is_person=record.permission in ("review", "admin"),
            scopes=record.scopes,
            orgs=None if record.orgs is None else tuple(Owner.org(o).key for o in record.orgs),
            token_id=record.id,
            token_expires_at=record.expires_at,
        )
