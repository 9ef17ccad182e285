"""A REST request's token is looked up in the worker-thread call of its operation, and its
rate limit taken from the store in leases (service/budget.py): through the real application,
on both backends, a revoked or expired token is still refused on its very next request while
its lease lasts, a limit is still enforced to the request, and a refused request changes
nothing. Each refusal sits beside a request that succeeds."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conftest import Clock
from tests.serving import Api, api_on_both_backends, error_of

from lorestore.auth.actor import local_actor
from lorestore.models import TokenCreateParams, TokenRevokeParams
from lorestore.service import utcnow
from lorestore.service.budget import lease_size

S = "repo::acme/app"


api = api_on_both_backends()


@pytest.fixture
def clock(api: Api) -> Clock:
    """The service's clock, held still: a test's requests all fall in one minute."""
    held = Clock(utcnow())
    api.service.clock = held
    return held


def mint(api: Api, name: str, **kw: Any) -> tuple[str, str]:
    """A write token: its secret and its id."""
    params = TokenCreateParams.model_validate({"name": name, "permission": "write", **kw})
    created = api.service.token_create(local_actor(), params)
    return created.token, created.info.id


def test_a_revoked_token_is_refused_on_its_next_request_within_its_lease(
    api: Api, clock: Clock
) -> None:
    (agent, agent_id), (other, _) = mint(api, "agent"), mint(api, "other")
    assert lease_size(api.service.rate_limit or 0) > 1  # requests are left in the lease
    for token in (agent, other):  # each reserves a lease
        assert api.post("memory_scopes", token=token).status_code == 200
    api.service.token_revoke(local_actor(), TokenRevokeParams(id=agent_id))
    body = error_of(api.post("memory_scopes", token=agent), 401)
    assert body["code"] == "unauthenticated" and "revoked" in body["message"]
    assert api.post("memory_scopes", token=other).status_code == 200  # the control


def test_an_expired_token_is_refused_on_its_next_request_within_its_lease(
    api: Api, clock: Clock
) -> None:
    (short, _), (lasting, _) = mint(api, "short", expires_days=1), mint(api, "lasting")
    assert api.post("memory_scopes", token=short).status_code == 200  # reserves a lease
    assert api.post("memory_scopes", token=lasting).status_code == 200
    clock.advance(days=1, seconds=1)
    body = error_of(api.post("memory_scopes", token=short), 401)
    assert body["code"] == "unauthenticated" and "expired" in body["message"]
    assert api.post("memory_scopes", token=lasting).status_code == 200  # the control


def test_a_limit_in_leases_refuses_the_request_past_it(api: Api, clock: Clock) -> None:
    api.service.rate_limit = 40  # leases of 2
    busy, other = api.mint(permission="read"), api.mint(permission="read")
    for n in range(40):
        assert api.post("memory_scopes", token=busy).status_code == 200, n
    limited = api.post("memory_scopes", token=busy)
    assert error_of(limited, 429)["code"] == "rate_limited"
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    assert api.post("memory_scopes", token=other).status_code == 200  # another token is not
    clock.advance(minutes=1)
    assert api.post("memory_scopes", token=busy).status_code == 200  # a new minute


def test_refusals_before_the_operation_change_nothing(api: Api, clock: Clock) -> None:
    revoked, revoked_id = mint(api, "gone")
    assert api.post("memory_scopes", token=revoked).status_code == 200  # its lease
    api.service.token_revoke(local_actor(), TokenRevokeParams(id=revoked_id))
    body = {"scope": S, "key": "k", "value": "from a revoked token"}
    assert error_of(api.post("memory_write", body, token=revoked), 401)
    assert error_of(api.post("memory_write", {"scope": S}, token=revoked), 401)  # not a 400
    assert api.ok("memory_list", {"scope": S})["lessons"] == []
    api.ok("memory_write", {"scope": S, "key": "k", "value": "the admin's"})  # the control
    assert [x["key"] for x in api.ok("memory_list", {"scope": S})["lessons"]] == ["k"]
