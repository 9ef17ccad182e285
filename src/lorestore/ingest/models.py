"""Arguments and results of the webhook operations (``lorestore webhook add|list|rotate|remove|
stats``, and their REST routes), and the answer to a delivery."""

from __future__ import annotations

from pydantic import Field

from lorestore.models import Params, Result

WEBHOOK_PATH = "/webhooks/github"


class WebhookTargetParams(Params):
    target: str = Field(
        description="a repository (owner/name) or an account (owner: every repository of it)"
    )
    owner: str | None = Field(
        None,
        description="the tenant its lessons belong to: user:NAME or org:SLUG (a bare word is "
        "an org); you by default",
    )


class WebhookStatsParams(Params):
    target: str | None = Field(None, description="only this repository or account")


class WebhookInfo(Result):
    id: str
    owner: str = Field(description="'user:<id>' or 'org:<slug>': the tenant lessons land in")
    target: str = Field(description="owner/name, or owner for every repository of an account")
    created_at: str
    created_by: str
    rotated_at: str | None = None
    previous_until: str | None = Field(
        None, description="until when the secret before the last rotation is still accepted"
    )


class WebhookSecretResult(Result):
    secret: str = Field(description="the webhook secret, shown this once; stored encrypted")
    webhook: WebhookInfo
    url_path: str = Field(WEBHOOK_PATH, description="where GitHub posts deliveries")


class WebhookListResult(Result):
    webhooks: list[WebhookInfo]


class WebhookCountInfo(Result):
    owner: str
    target: str
    reason: str = Field(
        description="how deliveries ended: created, updated, seen, proposed, replay, ping, "
        "event:<name>.<action>, bot, ci_status, dependency_bot, code_only, too_short, "
        "secret:<pattern>, tombstoned, unbound_repository, ..."
    )
    count: int
    last_at: str


class WebhookStatsResult(Result):
    counts: list[WebhookCountInfo]


class DeliveryResult(Result):
    """The answer to GitHub: what became of the delivery (never a lesson's text)."""

    delivery: str
    outcome: str
    lessons: list[str] = Field(default_factory=list, description="keys written or seen")
