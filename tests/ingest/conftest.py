"""Fixtures of the webhook tests: the application in process on both backends with a server
key, a webhook for acme/app with its one-time secret, and a sender of signed deliveries."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from tests.conftest import Clock
from tests.github import body_of, headers
from tests.serving import Api, backend_api

from lorestore.auth.actor import local_actor
from lorestore.ingest.models import WebhookTargetParams

KEY = Fernet.generate_key().decode()


@dataclass
class Hook:
    """The application, the webhook's secret, and deliveries posted to it."""

    api: Api
    secret: str
    clock: Clock

    def post(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        secret: str | None = "",
        delivery: str | None = None,
    ) -> Any:
        body = body_of(payload)
        signing = self.secret if secret == "" else secret
        sent = headers(event, body, signing, delivery)
        return self.api.client.post("/webhooks/github", content=body, headers=sent)

    def lessons(self, scope: str = "repo::acme/app") -> list[dict[str, Any]]:
        lessons: list[dict[str, Any]] = self.api.ok("memory_list", {"scope": scope})["lessons"]
        return lessons

    def stats(self) -> dict[str, int]:
        counts = self.api.ok("webhook_stats", {})["counts"]
        return {c["reason"]: c["count"] for c in counts}


@pytest.fixture(params=["sqlite", "postgres"])
def api(
    request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Api]:
    monkeypatch.setenv("LORESTORE_WEBHOOK_KEY", KEY)
    yield from backend_api(request, home, monkeypatch)


@pytest.fixture
def hook(api: Api, clock: Clock) -> Hook:
    clock.now = clock.now.replace(year=2026, month=11, day=30)
    api.service.clock = clock
    params = WebhookTargetParams.model_validate({"target": "acme/app"})
    added = api.service.webhook_add(local_actor(), params)
    return Hook(api, added.secret, clock)
