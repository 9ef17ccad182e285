"""The webhook primitives written once over SQL (``storage/webhooks.py`` says what they keep):
each runs a named query of the backend's ``webhooks.sql``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from lorestore.storage.rows import RowLike, ts_text
from lorestore.storage.sql.base import SQLBase
from lorestore.storage.webhooks import WebhookCount, WebhookRecord


def _webhook(row: RowLike, *, bookkeeping: bool = True) -> WebhookRecord:
    record = WebhookRecord(
        owner=row["owner"],
        target=row["target"],
        id=str(row["id"]),
        secret=row["secret"],
        previous_secret=row["previous_secret"],
        previous_until=ts_text(row["previous_until"]),
    )
    if not bookkeeping:
        return record
    return replace(
        record,
        created_at=ts_text(row["created_at"]),
        created_by=row["created_by"],
        rotated_at=ts_text(row["rotated_at"]),
    )


class WebhookPrimitives(SQLBase):
    """Webhooks, deliveries and their counts, over the dialect."""

    def insert_webhook(self, hook: WebhookRecord) -> bool:
        params = {
            "owner": hook.owner,
            "target": hook.target,
            "id": hook.id,
            "secret": hook.secret,
            "created_at": hook.created_at,
            "created_by": hook.created_by,
        }
        return self._count("insert_webhook", params) == 1

    def webhooks(self, owners: Sequence[str]) -> list[WebhookRecord]:
        return [_webhook(r) for r in self._all("webhooks_of", {"owners": self._array(owners)})]

    def rotate_webhook(
        self, owner: str, target: str, secret: str, previous_until: str, at: str
    ) -> bool:
        params = {
            "owner": owner,
            "target": target,
            "secret": secret,
            "previous_until": previous_until,
            "at": at,
        }
        return self._count("rotate_webhook", params) == 1

    def delete_webhook(self, owner: str, target: str) -> bool:
        return self._count("delete_webhook", {"owner": owner, "target": target}) == 1

    def webhook_secrets(self) -> list[WebhookRecord]:
        return [_webhook(r, bookkeeping=False) for r in self._all("webhook_secrets", {})]

    def claim_delivery(self, owner: str, delivery: str, event: str, at: str) -> bool:
        params = {"owner": owner, "delivery": delivery, "event": event, "at": at}
        return self._count("claim_delivery", params) == 1

    def settle_delivery(self, owner: str, delivery: str, outcome: str) -> None:
        self._exec("settle_delivery", {"owner": owner, "delivery": delivery, "outcome": outcome})

    def count_webhook(self, owner: str, target: str, reason: str, at: str) -> None:
        params = {"owner": owner, "target": target, "reason": reason, "at": at}
        self._exec("count_webhook", params)

    def webhook_counts(self, owners: Sequence[str]) -> list[WebhookCount]:
        rows = self._all("webhook_counts", {"owners": self._array(owners)})
        return [
            WebhookCount(
                owner=r["owner"],
                target=r["target"],
                reason=r["reason"],
                count=int(r["count"]),
                last_at=ts_text(r["last_at"]) or "",
            )
            for r in rows
        ]

    def purge_deliveries(self, owner: str, cutoff: str) -> int:
        return self._count("purge_deliveries", {"owner": owner, "cutoff": cutoff})

    def delivery_owners(self, cutoff: str) -> list[str]:
        return [str(r["owner"]) for r in self._all("delivery_owners", {"cutoff": cutoff})]
