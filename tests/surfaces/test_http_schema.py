"""Property-based tests of the REST API from its own OpenAPI document (schemathesis): generated
requests, valid and invalid, to every route with an admin token. No response may be a server
error, have an undocumented status or content type, or violate its published schema."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from cryptography.fernet import Fernet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from lorestore.auth.actor import local_actor
from lorestore.composition import build_service
from lorestore.config import load_settings
from lorestore.models import TokenCreateParams, WriteParams
from lorestore.transports.http import OPENAPI_PATH
from lorestore.transports.http.app import build_app
from lorestore.transports.http.openapi import openapi_document

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
EXAMPLES = 25  # per route and method: bounded so the whole file runs in seconds
SCOPES = ["global", "repo::acme/app"]
STEERED = {"scope": SCOPES, "key": ["k", "key", "a"], "value": ["lesson k", "another lesson"]}


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx: Any, value: Any) -> bytes:
    """memory_import's body: generated text as it comes. It is mostly not JSON Lines, which the
    route must report line by line (a 200 with problems), never answer with a server error."""
    text = value if isinstance(value, str) else json.dumps(value)
    return text.encode("utf-8", "surrogatepass")


@dataclasses.dataclass
class Served:
    app: Any
    token: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("schema-home")
    # A server key, so that webhook_add and webhook_rotate reach their success paths too.
    key = Fernet.generate_key().decode()
    config = dataclasses.replace(
        load_settings({"LORESTORE_HOME": str(home), "LORESTORE_WEBHOOK_KEY": key}),
        maintenance_hours=None,
    )
    service = build_service(config)
    service.rate_limit = None  # a thousand calls on one token would meet 429 for most of them
    admin = local_actor()
    token = service.token_create(admin, TokenCreateParams(name="fuzz", permission="admin"))  # type: ignore[call-arg]
    # Something to find, so that generated reads reach lessons and not only not_found.
    for key in ("k", "key", "a"):
        service.memory_write(admin, WriteParams(scope="global", key=key, value=f"lesson {key}"))  # type: ignore[call-arg]
    yield Served(build_app(service, config), token.token)
    service.store.close()


def steer(case: Any, data: st.DataObject) -> None:
    """Random text is almost never a valid scope or key, so most generated calls would stop at
    400. Swap in real addresses part of the time, so that success paths are exercised too."""
    for arguments in (case.body, case.query):
        if not isinstance(arguments, dict):
            continue
        for name, choices in STEERED.items():
            if isinstance(arguments.get(name), str):
                arguments[name] = data.draw(st.sampled_from([*choices, arguments[name]]))
        if isinstance(arguments.get("scopes"), list):
            arguments["scopes"] = data.draw(st.sampled_from([SCOPES, arguments["scopes"]]))


@pytest.fixture(scope="module")
def api_schema(served: Served) -> Any:
    return schemathesis.openapi.from_asgi(OPENAPI_PATH, served.app)


# One test per route and method, each a hypothesis test over schemathesis' strategy for it.
# (schemathesis.pytest.from_fixture reads a private pytest attribute that pytest 9 removed.)
ROUTES = [
    (path, method.upper()) for path, item in openapi_document()["paths"].items() for method in item
]


@pytest.mark.parametrize(("path", "method"), ROUTES, ids=[f"{m} {p}" for p, m in ROUTES])
def test_no_server_errors_and_no_schema_violations(
    api_schema: Any, served: Served, path: str, method: str
) -> None:
    headers = {"Authorization": f"Bearer {served.token}"}

    @given(case=api_schema[path][method].as_strategy(), data=st.data())
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    def call(case: Any, data: st.DataObject) -> None:
        steer(case, data)
        case.call_and_validate(headers=headers, checks=CHECKS)

    call()
