"""What every operation shares: the store, the clock, authorisation, and the audit event."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lorestore.auth.actor import Actor, Permission
from lorestore.config import WebhookSettings
from lorestore.core.errors import LorestoreError, not_found
from lorestore.core.patterns import most_specific, scope_allowed
from lorestore.core.scope import parse_scope
from lorestore.core.timestamps import format_ts
from lorestore.core.validation import validate_key
from lorestore.ingest.keys import SecretBox
from lorestore.service.audit import AuditChain, lesson_entry
from lorestore.service.budget import Leases
from lorestore.storage.protocol import Binding, Store, StoredLesson, Transaction

if TYPE_CHECKING:
    from lorestore.core.records import Lesson, LessonVersion

Clock = Callable[[], datetime]
BlobLookup = Callable[[str, list[str]], dict[str, str | None]]


def utcnow() -> datetime:
    return datetime.now(UTC)


def bounded(name: str, value: int, low: int, high: int) -> int:
    if isinstance(value, bool) or not low <= value <= high:
        raise LorestoreError("invalid_argument", f"{name} must be between {low} and {high}")
    return value


def is_expired(lesson: Lesson, now: str) -> bool:
    return lesson.expires_at is not None and lesson.expires_at <= now


def is_served(lesson: Lesson, now: str) -> bool:
    """Whether read, list and search may return the lesson at all."""
    return lesson.status == "active" and lesson.trust != "rejected" and not is_expired(lesson, now)


def version_of(lesson: Lesson, digest: str, actor: Actor, state: str = "accepted") -> LessonVersion:
    from lorestore.core.records import LessonVersion  # the writes' (recall loads no pydantic)

    return LessonVersion.model_validate(
        {
            "lesson_id": lesson.id,
            "version": lesson.version,
            "state": state,
            "value": lesson.value,
            "value_digest": digest,
            "tags": lesson.tags,
            "valid_from": lesson.valid_from,
            "valid_to": lesson.valid_to,
            "recorded_at": lesson.recorded_at,
            "actor": actor.principal,
            "source": lesson.source,
        }
    )


def address(scope: str, key: str) -> tuple[str, str]:
    """Validate and normalise an address."""
    return parse_scope(scope).text, validate_key(key)


class ServiceBase:
    """The store, the clock and the helpers every group of operations uses."""

    def __init__(
        self,
        store: Store,
        *,
        clock: Clock = utcnow,
        corroborate_at: int = 3,
        rate_limit: int | None = 600,
        blob_lookup: BlobLookup | None = None,
        webhooks: WebhookSettings | None = None,
    ) -> None:
        self.store = store
        # GitHub capture's settings, and the key its secrets are sealed with (ingest/keys.py).
        self.webhooks = webhooks or WebhookSettings()
        self.secret_box = SecretBox(self.webhooks.key)
        # How recall hashes depends_on files in a working directory (git), for entry points
        # that run where the files are; a server leaves it unset and expects blobs from clients.
        self.blob_lookup = blob_lookup
        self.clock = clock
        self.corroborate_at = corroborate_at
        self.rate_limit = rate_limit  # requests per token per minute; None: unlimited
        self.leases = Leases()  # of that budget, what this process has reserved (budget.py)

    def _now(self) -> str:
        return format_ts(self.clock())

    @staticmethod
    def _require(actor: Actor, permission: Permission) -> None:
        """Refuse unless the actor holds ``permission`` (whatever scopes it is confined to)."""
        if not actor.can(permission):
            raise LorestoreError(
                "forbidden",
                f"this operation needs the {permission!r} permission",
                hint=(
                    f"a token with the {permission} permission is a person's: run this as "
                    "the store's person (the lorestore CLI on its machine), or with such a "
                    "token (lorestore token create --permission " + permission + ")"
                    if permission in ("review", "admin")
                    else f"use a token with the {permission} permission or above "
                    "(read < write < review < admin)"
                ),
                details={"needs": permission},
            )

    def _authorise(self, actor: Actor, permission: Permission, *scopes: str) -> None:
        """Refuse unless the actor holds ``permission`` and may touch every scope named.

        With no scope named, a scope-confined token is refused: the operation would reach
        beyond its scopes.
        """
        self._require(actor, permission)
        if actor.scopes is None:
            return
        if not scopes:
            raise LorestoreError(
                "forbidden",
                "without a scope this would reach beyond the scopes this token is confined to",
                hint="name a scope the token covers where the operation takes one, or use a "
                "token without scope limits",
                details={"token_scopes": list(actor.scopes)},
            )
        for text in scopes:
            if not scope_allowed(actor.scopes, parse_scope(text)):
                raise LorestoreError(
                    "forbidden",
                    f"this token does not cover {text}",
                    hint="use a token whose scope patterns include it",
                    details={"scope": text, "token_scopes": list(actor.scopes)},
                )

    @staticmethod
    def _role(tx: Transaction, actor: Actor, org: str) -> str | None:
        """The actor's role in ``org``, None when not a member."""
        return next((m.role for m in tx.memberships(actor.principal) if m.org == org), None)

    @staticmethod
    def _unconfined(actor: Actor, what: str) -> None:
        """Refuse a token confined to some scopes or orgs an operation on its principal as a
        whole (its tokens, a new org, the owner-wide default policy)."""
        if actor.scopes is not None or actor.orgs is not None:
            raise LorestoreError(
                "forbidden",
                f"{what} acts beyond the scopes or orgs this token is confined to",
                hint="use a token without scope or org limits",
                details={
                    "token_scopes": None if actor.scopes is None else list(actor.scopes),
                    "token_orgs": None if actor.orgs is None else list(actor.orgs),
                },
            )

    @staticmethod
    def _within_orgs(actor: Actor, org: str) -> None:
        """Refuse an org-confined token an operation on an org outside its orgs."""
        if actor.orgs is not None and org not in actor.orgs:
            raise LorestoreError(
                "forbidden",
                f"this token is not allowed to act for {org}",
                hint="use a token whose orgs include it",
                details={"org": org, "token_orgs": list(actor.orgs)},
            )

    @staticmethod
    def _owner_for(
        tx: Transaction,
        actor: Actor,
        scope: str,
        *,
        write: bool,
        bindings: list[Binding] | None = None,
    ) -> str:
        """The tenant that owns ``scope`` for this actor: the org a scope binding routes it
        to (the most specific binding wins), else the actor itself. Refuses, rather than
        falling back, when the actor may not act in that org. An operation resolving several
        scopes passes the bindings it read once."""
        parsed = parse_scope(scope)
        if bindings is None:
            bindings = tx.bindings_for(actor.principal)
        binding = most_specific(bindings, parsed, lambda b: b.pattern)
        if binding is None:
            if actor.orgs is not None:
                raise LorestoreError(
                    "forbidden",
                    f"this token is confined to {', '.join(actor.orgs)}, and "
                    f"{scope} is not bound to any of them",
                    details={"scope": scope, "token_orgs": list(actor.orgs)},
                )
            return actor.owner
        org = binding.org
        if binding.role is None:
            raise LorestoreError(
                "forbidden",
                f"{scope} belongs to {org} ({binding.pattern}), and you are not a member",
                hint=f"ask an admin of {org} for an invite",
                details={"scope": scope, "org": org},
            )
        if write and binding.role == "viewer":
            raise LorestoreError(
                "forbidden",
                f"you are a viewer in {org}: you may read {scope} but not write",
                hint=f"ask an admin of {org} for the member role",
                details={"scope": scope, "org": org, "role": "viewer"},
            )
        if actor.orgs is not None and org not in actor.orgs:
            raise LorestoreError(
                "forbidden",
                f"this token is not allowed to act for {org}",
                details={"scope": scope, "org": org, "token_orgs": list(actor.orgs)},
            )
        return org

    @staticmethod
    def _readable_owners(tx: Transaction, actor: Actor, *, admin: bool = False) -> list[str]:
        """The actor and its orgs (only those it administers when ``admin``), narrowed by
        the token's orgs."""
        roles = ("owner", "admin") if admin else ("owner", "admin", "member", "viewer")
        orgs = [m.org for m in tx.memberships(actor.principal) if m.role in roles]
        owners = [actor.owner, *orgs]
        if actor.orgs is not None:
            owners = [o for o in owners if o in actor.orgs]
        return owners

    @staticmethod
    def _existing(tx: Transaction, owner: str, scope: str, key: str) -> StoredLesson:
        stored = tx.lesson_at(owner, scope, key)
        if stored is None:
            raise not_found(scope, key, active=False)
        return stored

    def _audit(
        self,
        tx: Transaction,
        actor: Actor,
        action: str,
        lesson: Lesson | None,
        *,
        before: tuple[int, str] | None = None,
        after: tuple[int, str] | None = None,
        reason: str | None = None,
        detail: dict[str, Any] | None = None,
        owner: str | None = None,
        at: str | None = None,
    ) -> None:
        """Append one event to the owner's hash-chained audit log, inside ``tx``.

        ``lesson`` is None for an event about the store rather than one lesson (a sweep, a
        policy); its chain is then ``owner``'s, else the actor's own.
        """
        entry = lesson_entry(
            actor,
            action,
            lesson,
            owner=lesson.owner.key if lesson else (owner or actor.owner),
            at=at or self._now(),  # a write's own time, so as_of reads meet its event
            before=before,
            after=after,
            reason=reason,
            detail=detail,
        )
        AuditChain(tx).append(entry)
