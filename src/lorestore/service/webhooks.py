"""Webhook administration: bind a repository or an account to a tenant with a secret shown once
(``webhook_add``), list, rotate (the old secret accepted for a grace period) and remove them, and
the counts of how their deliveries ended (``webhook_stats``). Secrets are stored sealed with the
server's key (``ingest/keys.py``); the delivery itself is ``service/capture.py``'s."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

from lorestore.auth.actor import Actor
from lorestore.core.errors import LorestoreError
from lorestore.core.owner import Owner
from lorestore.core.patterns import most_specific, pattern_within
from lorestore.core.scope import parse_scope
from lorestore.core.timestamps import format_ts
from lorestore.ingest.keys import new_secret
from lorestore.ingest.models import (
    WEBHOOK_PATH,
    WebhookCountInfo,
    WebhookInfo,
    WebhookListResult,
    WebhookSecretResult,
    WebhookStatsParams,
    WebhookStatsResult,
    WebhookTargetParams,
)
from lorestore.models import NoParams
from lorestore.service.base import ServiceBase
from lorestore.storage.protocol import Transaction
from lorestore.storage.webhooks import WebhookRecord

_TARGET = re.compile(r"^[a-z0-9._-]{1,100}(?:/[a-z0-9._-]{1,100})?$")


def webhook_target(raw: str) -> str:
    """A repository ``owner/name`` or an account ``owner``, in lower case (GitHub compares them
    so); a URL of either is taken as what it names."""
    text = raw.strip().lower().removesuffix(".git").rstrip("/")
    for prefix in ("https://github.com/", "http://github.com/", "github.com/"):
        text = text.removeprefix(prefix)
    if not _TARGET.match(text):
        raise LorestoreError(
            "invalid_argument",
            f"{raw!r} is neither a repository (owner/name) nor an account (owner)",
            hint="e.g. lorestore webhook add acme/app, or lorestore webhook add acme for every "
            "repository of acme",
        )
    return text


def _info(hook: WebhookRecord) -> WebhookInfo:
    return WebhookInfo(
        id=hook.id,
        owner=hook.owner,
        target=hook.target,
        created_at=hook.created_at or "",
        created_by=hook.created_by or "",
        rotated_at=hook.rotated_at,
        previous_until=hook.previous_until,
    )


class WebhookOperations(ServiceBase):
    def _webhook_owner(self, tx: Transaction, actor: Actor, given: str | None) -> str:
        """The tenant a webhook is managed for: the caller, or an org it administers."""
        if given is None or given.strip() in ("", actor.owner):
            return actor.owner
        text = given.strip().lower()
        owner = Owner.parse(text) if ":" in text else Owner.org(text)
        if owner.kind == "user":
            raise LorestoreError(
                "forbidden",
                f"a webhook for {owner.key} is theirs to add",
                hint="leave out --owner for your own, or name an org you administer",
            )
        self._within_orgs(actor, owner.key)
        if self._role(tx, actor, owner.key) not in ("owner", "admin"):
            raise LorestoreError(
                "forbidden",
                f"only an owner or admin of {owner.key} manages its webhooks",
                hint=f"ask an admin of {owner.key}",
                details={"org": owner.key},
            )
        return owner.key

    @staticmethod
    def _check_routed(tx: Transaction, actor: Actor, owner: str, target: str) -> None:
        """The lessons a webhook captures are read where the scope binding routes the
        repository's scope: an org's webhook needs it routed to the org, a person's needs it
        routed to no org, or nobody would find what it captures."""
        bindings = tx.bindings_for(actor.principal)
        pattern = f"repo::{target}" if "/" in target else f"repo::{target}/*"
        if "/" in target:
            binding = most_specific(bindings, parse_scope(pattern), lambda b: b.pattern)
            routed_to = binding.org if binding else actor.owner
        else:
            ours = tuple(b.pattern for b in bindings if b.org == owner)
            routed_to = owner if ours and pattern_within(pattern, ours) else actor.owner
        if routed_to == owner:
            return
        slug = Owner.parse(owner).name if owner.startswith("org:") else "ORG"
        raise LorestoreError(
            "conflict",
            f"{pattern} is read as {routed_to}'s, so what this webhook captures for {owner} "
            "would reach nobody",
            hint=f"bind it first: lorestore org bind {slug} {pattern}"
            if owner.startswith("org:")
            else f"add the webhook for the org it is bound to: --owner {routed_to}",
            details={"pattern": pattern, "routed_to": routed_to},
        )

    def _webhook_at(self, tx: Transaction, owner: str, target: str) -> WebhookRecord:
        found = next((h for h in tx.webhooks([owner]) if h.target == target), None)
        if found is None:
            raise LorestoreError(
                "not_found",
                f"{owner} has no webhook for {target}",
                hint="`lorestore webhook list` shows them",
                details={"owner": owner, "target": target},
            )
        return found

    def webhook_add(self, actor: Actor, p: WebhookTargetParams) -> WebhookSecretResult:
        self._authorise(actor, "admin")
        target = webhook_target(p.target)
        secret = new_secret()
        sealed = self.secret_box.seal(secret)  # no key: refused before anything is stored
        now = self._now()
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            owner = self._webhook_owner(tx, actor, p.owner)
            self._check_routed(tx, actor, owner, target)
            hook = WebhookRecord(
                owner=owner,
                target=target,
                id=str(uuid.uuid4()),
                secret=sealed,
                created_at=now,
                created_by=actor.principal,
            )
            if not tx.insert_webhook(hook):
                raise LorestoreError(
                    "conflict",
                    f"{owner} has a webhook for {target} already",
                    hint=f"`lorestore webhook rotate {target}` gives it a new secret",
                    details={"owner": owner, "target": target},
                )
            detail = {"webhook": hook.id, "target": target}  # never the secret
            self._audit(tx, actor, "webhook.add", None, owner=owner, detail=detail)
        return WebhookSecretResult(secret=secret, webhook=_info(hook), url_path=WEBHOOK_PATH)

    def webhook_list(self, actor: Actor, p: NoParams) -> WebhookListResult:
        self._authorise(actor, "admin")
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            owners = self._readable_owners(tx, actor, admin=True)
            hooks = tx.webhooks(owners)
        return WebhookListResult(webhooks=[_info(h) for h in hooks])

    def webhook_rotate(self, actor: Actor, p: WebhookTargetParams) -> WebhookSecretResult:
        self._authorise(actor, "admin")
        target = webhook_target(p.target)
        secret = new_secret()
        sealed = self.secret_box.seal(secret)
        now_dt = self.clock()
        now = format_ts(now_dt)
        until = now_dt + timedelta(hours=self.webhooks.grace_hours)
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            owner = self._webhook_owner(tx, actor, p.owner)
            hook = self._webhook_at(tx, owner, target)
            tx.rotate_webhook(owner, target, sealed, format_ts(until), now)
            detail = {"webhook": hook.id, "target": target, "previous_until": format_ts(until)}
            self._audit(tx, actor, "webhook.rotate", None, owner=owner, detail=detail)
            rotated = self._webhook_at(tx, owner, target)
        return WebhookSecretResult(secret=secret, webhook=_info(rotated), url_path=WEBHOOK_PATH)

    def webhook_remove(self, actor: Actor, p: WebhookTargetParams) -> WebhookInfo:
        self._authorise(actor, "admin")
        target = webhook_target(p.target)
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            owner = self._webhook_owner(tx, actor, p.owner)
            hook = self._webhook_at(tx, owner, target)
            tx.delete_webhook(owner, target)
            detail = {"webhook": hook.id, "target": target}
            self._audit(tx, actor, "webhook.remove", None, owner=owner, detail=detail)
        return _info(hook)

    def webhook_stats(self, actor: Actor, p: WebhookStatsParams) -> WebhookStatsResult:
        """What each webhook's deliveries became, counted by reason, for the owners the caller
        reads."""
        self._authorise(actor, "read")
        target = None if p.target is None else webhook_target(p.target)
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            counts = tx.webhook_counts(self._readable_owners(tx, actor))
        return WebhookStatsResult(
            counts=[
                WebhookCountInfo(
                    owner=c.owner,
                    target=c.target,
                    reason=c.reason,
                    count=c.count,
                    last_at=c.last_at,
                )
                for c in counts
                if target is None or c.target == target
            ]
        )
