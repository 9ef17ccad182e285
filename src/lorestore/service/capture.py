"""A GitHub delivery applied (``POST /webhooks/github``): its signature checked against the
webhooks' secrets before the body is parsed, the delivery claimed once (a replay changes
nothing), the event admitted or ignored, the comment filtered, and what is kept written through
the one write path as the tenant the webhook binds (tombstones first, caps, audit). Every ending
is counted for ``lorestore webhook stats``; a refused secret is audited by its pattern's name."""

from __future__ import annotations

import json
import logging
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lorestore.auth.actor import AGENT_PERMISSIONS, Actor
from lorestore.core.errors import LorestoreError
from lorestore.core.normalise import value_digests
from lorestore.core.scope import parse_scope
from lorestore.models import WriteParams
from lorestore.service.corrections import check_tombstone
from lorestore.service.writes import WriteOperations

if TYPE_CHECKING:
    from lorestore.ingest.events import Comment, Resolved
    from lorestore.ingest.models import DeliveryResult
    from lorestore.storage.protocol import Transaction
    from lorestore.storage.webhooks import WebhookRecord

# lorestore.ingest (GitHub's events, the signal filter, the contents API) is imported by the
# methods that take a delivery: every service carries this mixin, and a one-shot command or a
# hook never receives one.

LOG = logging.getLogger("lorestore.webhook")
# Refusals a write makes before it changes anything: the delivery still counts, as that outcome.
_WRITE_OUTCOMES = {"rejected_value": "tombstoned", "archived": "archived", "expired": "expired"}


@dataclass(frozen=True, slots=True)
class Delivery:
    """One POST as received: the headers that matter and the raw body."""

    event: str
    delivery: str
    signature: str | None
    body: bytes


def _unauthenticated(message: str) -> LorestoreError:
    return LorestoreError(
        "unauthenticated",
        message,
        hint="set the GitHub webhook's secret to the one `lorestore webhook add` (or `rotate`) "
        "printed, with content type application/json",
    )


def _bad_delivery(message: str) -> LorestoreError:
    return LorestoreError(
        "invalid_argument",
        message,
        hint="deliveries come from GitHub, with the webhook's content type application/json",
    )


class CaptureOperations(WriteOperations):
    def github_delivery(self, d: Delivery) -> tuple[int, DeliveryResult]:
        """The status and answer for one delivery; 401 (unsigned or signed by no webhook's
        secret) and 404 (a repository no matching webhook binds) are raised."""
        if not d.signature:
            raise _unauthenticated("the delivery has no X-Hub-Signature-256 header")
        hooks = self._signers(d)
        if not hooks:
            LOG.warning("webhook delivery %r: no webhook secret signs it", d.delivery[:100])
            raise _unauthenticated("no webhook's secret signs this delivery")
        for name, value in (("X-GitHub-Delivery", d.delivery), ("X-GitHub-Event", d.event)):
            if not value or len(value) > 100 or not value.isprintable():
                raise _bad_delivery(f"the delivery has no usable {name} header")
        try:
            payload = json.loads(d.body)
        except (ValueError, UnicodeError):
            raise _bad_delivery("the delivery's body is not JSON") from None
        if not isinstance(payload, dict):
            raise _bad_delivery("the delivery's body is not a JSON object")
        hook = _binding(hooks, d.event, payload)
        if hook is None:
            return self._unbound(hooks[0], d, payload)
        return self._apply(hook, d, payload)

    def _signers(self, d: Delivery) -> list[WebhookRecord]:
        """The webhooks whose secret (or previous secret, within its grace) signed the body."""
        from lorestore.ingest.keys import signed_by

        assert d.signature is not None
        now = self._now()
        with self.store.transaction(write=False) as tx:  # no actor yet: the definer lookup
            hooks = tx.webhook_secrets()
        found = []
        for hook in hooks:
            secrets = [self.secret_box.open(hook.secret)]
            if hook.previous_secret and hook.previous_until and hook.previous_until > now:
                secrets.append(self.secret_box.open(hook.previous_secret))
            if signed_by(d.signature, d.body, [s for s in secrets if s is not None]):
                found.append(hook)
        return found

    def _unbound(
        self, hook: WebhookRecord, d: Delivery, payload: dict[str, Any]
    ) -> tuple[int, DeliveryResult]:
        from lorestore.ingest.events import repository

        repo = (repository(payload) or ("", ""))[0]
        LOG.warning(
            "webhook delivery %r: repository %r is not bound by webhook %s (%s)",
            d.delivery,
            repo,
            hook.id,
            hook.target,
        )
        with self.store.transaction(write=True, actor=hook.owner) as tx:
            tx.count_webhook(hook.owner, hook.target, "unbound_repository", self._now())
        raise LorestoreError(
            "not_found",
            f"the repository {repo or '(none)'} is not bound to the webhook that signed this",
            hint=f"`lorestore webhook add {repo or 'OWNER/NAME'}` binds it",
            details={"repository": repo},
        )

    def _apply(
        self, hook: WebhookRecord, d: Delivery, payload: dict[str, Any]
    ) -> tuple[int, DeliveryResult]:
        try:
            return self._apply_once(hook, d, payload)
        except LorestoreError as exc:
            # The transaction rolled back, its claim too: a redelivery may succeed (after the
            # owner's cap is raised, when the store is no longer busy). Counted on its own.
            with (
                suppress(LorestoreError),
                self.store.transaction(write=True, actor=hook.owner) as tx,
            ):
                tx.count_webhook(hook.owner, hook.target, f"failed:{exc.code}", self._now())
            raise

    def _apply_once(
        self, hook: WebhookRecord, d: Delivery, payload: dict[str, Any]
    ) -> tuple[int, DeliveryResult]:
        from lorestore.ingest.events import Comment, Ignored, Ping, Resolved, admit
        from lorestore.ingest.models import DeliveryResult

        admission = admit(d.event, payload)
        # GitHub is asked before the transaction opens: no lock is held while it answers.
        blob = self._blob(admission) if isinstance(admission, Comment) else None
        now = self._now()
        owner = hook.owner
        with self.store.transaction(write=True, actor=owner) as tx:
            if not tx.claim_delivery(owner, d.delivery, d.event, now):
                return 200, DeliveryResult(delivery=d.delivery, outcome="replay")
            status, outcome = 202, ""
            keys: list[str] = []
            if isinstance(admission, Ping):
                status, outcome = 200, "ping"
            elif isinstance(admission, Ignored):
                outcome = admission.reason
            elif isinstance(admission, Comment):
                sender = payload.get("sender")
                sender_type = sender.get("type") if isinstance(sender, dict) else None
                status, outcome, keys = self._comment(tx, hook, d, admission, sender_type, blob)
            elif isinstance(admission, Resolved):
                status, outcome, keys = self._resolved(tx, hook, admission)
            tx.settle_delivery(owner, d.delivery, outcome)
            tx.count_webhook(owner, hook.target, outcome, now)
        return status, DeliveryResult(delivery=d.delivery, outcome=outcome, lessons=keys)

    def _comment(
        self,
        tx: Transaction,
        hook: WebhookRecord,
        d: Delivery,
        c: Comment,
        sender_type: str | None,
        blob: str | None,
    ) -> tuple[int, str, list[str]]:
        from lorestore.ingest.signal import judge

        verdict = judge(c.body, author_type=c.author_type, sender_type=sender_type)
        if verdict.secret is not None:
            detail = {
                "pattern": verdict.secret,  # the pattern's name only: never the text
                "delivery": d.delivery,
                "event": d.event,
                "repository": c.repo,
                "comment": c.comment_id,
            }
            actor = _tenant(hook, c.author)
            self._audit(tx, actor, "webhook.refused", None, owner=hook.owner, detail=detail)
            return 202, f"secret:{verdict.secret}", []
        if verdict.reason is not None:
            return 202, verdict.reason, []
        scope = parse_scope(c.scope)
        actor = _tenant(hook, c.author)
        try:
            # The comment alone, too: a reviewer repeating a rejected lesson's text.
            check_tombstone(tx, hook.owner, scope, value_digests(c.body.strip()))
            # A new lesson expires after its event's TTL; an edit keeps the expiry the lesson
            # has (a verified lesson's is a reviewer's), but a comment first kept at its edit
            # (too short before) is new.
            new = tx.lesson_at(hook.owner, scope.text, c.key) is None
            params = WriteParams.model_validate(
                {
                    "scope": scope.text,
                    "key": c.key,
                    "value": c.value(),
                    "ttl_days": self.webhooks.ttl_for(c.kind) if new else None,
                    "source": c.source(),
                    # The commented file at the comment's commit, when GitHub said its blob.
                    "depends_on": [{"path": c.path, "blob": blob}] if c.path and blob else None,
                }
            )
            result = self._apply_write(tx, actor, hook.owner, self._prepare_write(actor, params))
        except LorestoreError as exc:
            if exc.code in _WRITE_OUTCOMES:
                return 202, _WRITE_OUTCOMES[exc.code], []
            if exc.code in ("value_too_large", "invalid_key", "invalid_scope"):
                return 202, exc.code, []
            raise
        return 200, result.result, [c.key]

    def _blob(self, c: Comment) -> str | None:
        """The commented file's blob at the comment's commit, from GitHub's contents API when a
        token is configured (``LORESTORE_GITHUB_TOKEN``); None otherwise."""
        token = self.webhooks.github_token
        if token is None or c.path is None or c.commit is None:
            return None
        from lorestore.ingest.contents import file_blob

        return file_blob(self.webhooks.github_api, token, c.repo, c.path, c.commit)

    def _resolved(
        self, tx: Transaction, hook: WebhookRecord, r: Resolved
    ) -> tuple[int, str, list[str]]:
        """Each captured comment of the thread seen once more, in the PR author's session: a
        corroboration by the person the review was for."""
        actor = _tenant(hook, r.pr_author)
        keys = []
        for c in r.comments:
            stored = tx.lesson_at(hook.owner, parse_scope(c.scope).text, c.key)
            if stored is None or stored.lesson.status != "active":
                continue
            lesson = stored.lesson
            params = WriteParams.model_validate(
                {"scope": lesson.scope, "key": lesson.key, "value": lesson.value}
            )
            try:
                self._apply_write(tx, actor, hook.owner, self._prepare_write(actor, params))
            except LorestoreError as exc:
                if exc.code not in _WRITE_OUTCOMES:
                    raise
                continue
            keys.append(c.key)
        return (200, "resolved", keys) if keys else (202, "resolved_unknown", [])


def _binding(
    hooks: list[WebhookRecord], event: str, payload: dict[str, Any]
) -> WebhookRecord | None:
    """The webhook, among those whose secret signed the delivery, that binds its repository
    (the repository's own before its account's); for an account's ping, the account's."""
    from lorestore.ingest.events import repository

    found = repository(payload)
    if found is None:
        org = payload.get("organization")
        login = str(org.get("login", "")).lower() if isinstance(org, dict) else ""
        if event != "ping" or not login:
            return None
        return next((h for h in hooks if h.target == login), None)
    full, account = found
    return next((h for h in hooks if h.target == full), None) or next(
        (h for h in hooks if h.target == account), None
    )


def _tenant(hook: WebhookRecord, author: str) -> Actor:
    """The capture acting as the tenant the webhook binds (so the lesson is never ownerless
    and row-level security applies), an agent's rights only (it can never review), in a session
    of the comment's author (recurrence counts people, not deliveries)."""
    return Actor(
        principal=hook.owner,
        owner=hook.owner,
        permissions=AGENT_PERMISSIONS,
        session=f"github:{author.lower()}",
        agent="github",
        is_person=False,
        delegated_by=f"webhook:{hook.id}",
    )
