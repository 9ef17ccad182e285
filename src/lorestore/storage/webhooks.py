"""What the store keeps for GitHub capture (docs/webhook.md): the webhooks' encrypted secrets,
the deliveries applied, the counts of how deliveries ended; the records that cross the Store
protocol and the primitives a transaction offers for them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class WebhookRecord:
    """A repository (``acme/app``) or an account (``acme``) bound to a tenant, with its secret
    encrypted by the server's key; ``previous_secret`` is accepted until ``previous_until``.
    The bookkeeping fields are None where only the secrets were read (a delivery's check)."""

    owner: str
    target: str
    id: str
    secret: str
    previous_secret: str | None = None
    previous_until: str | None = None
    created_at: str | None = None
    created_by: str | None = None
    rotated_at: str | None = None


@dataclass(frozen=True, slots=True)
class WebhookCount:
    """How many deliveries to one webhook ended one way (``reason``), and the last one's time."""

    owner: str
    target: str
    reason: str
    count: int
    last_at: str


class WebhookTransaction(Protocol):
    """The webhook primitives of a store transaction."""

    def insert_webhook(self, hook: WebhookRecord) -> bool:
        """Bind a target to an owner; False when that owner has bound it already."""

    def webhooks(self, owners: Sequence[str]) -> list[WebhookRecord]:
        """The webhooks of these owners, by owner and target."""

    def rotate_webhook(
        self, owner: str, target: str, secret: str, previous_until: str, at: str
    ) -> bool:
        """Make ``secret`` the webhook's, keeping its current one until ``previous_until``;
        False when there is no such webhook."""

    def delete_webhook(self, owner: str, target: str) -> bool: ...

    def webhook_secrets(self) -> list[WebhookRecord]:
        """Every tenant's webhooks, secrets encrypted, without bookkeeping: how a delivery is
        authenticated before any actor is known (a definer function on PostgreSQL)."""

    def claim_delivery(self, owner: str, delivery: str, event: str, at: str) -> bool:
        """Record a delivery as applied in this transaction; False when it was already (a
        concurrent claim of the same delivery waits for the first to commit)."""

    def settle_delivery(self, owner: str, delivery: str, outcome: str) -> None:
        """Record how a claimed delivery ended."""

    def count_webhook(self, owner: str, target: str, reason: str, at: str) -> None:
        """Add one to a webhook's count of deliveries that ended ``reason``."""

    def webhook_counts(self, owners: Sequence[str]) -> list[WebhookCount]: ...

    def purge_deliveries(self, owner: str, cutoff: str) -> int:
        """Erase an owner's delivery records received before ``cutoff``; how many."""

    def delivery_owners(self, cutoff: str) -> list[str]:
        """Owners (of every tenant) with delivery records received before ``cutoff``."""
