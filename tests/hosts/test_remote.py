"""The hooks and doctor against a server (LORESTORE_URL, LORESTORE_TOKEN): an agent's write
token recalls; a person's admin token is refused as `lorestore mcp` refuses it (the hook
answers empty and logs why); a server that is down answers empty in time."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from tests.hosts.conftest import Place
from tests.hosts.payloads import context_of, payload
from tests.hosts.test_hook import hook, log_lines
from tests.serving import Server, free_port

from lorestore.auth.actor import local_actor
from lorestore.composition import build_service
from lorestore.config import load_settings
from lorestore.hosts.hook import DEADLINE_S
from lorestore.models import TokenCreateParams

pytestmark = pytest.mark.slow
LESSON = "The release job signs tags with the team key."


@pytest.fixture
def server(place: Place) -> Iterator[tuple[Server, str, str]]:
    assert place.run("write", "repo::acme/widget", "release-signing", LESSON)[0] == 0
    service = build_service(load_settings())
    tokens = [
        service.token_create(local_actor(), TokenCreateParams(name=n, permission=p)).token  # type: ignore[call-arg]
        for n, p in (("agent", "write"), ("me", "admin"))
    ]
    service.store.close()
    running = Server(place.store, "--no-admin-token")
    yield running, tokens[0], tokens[1]
    running.stop()


def test_hooks_recall_from_a_server_with_an_agents_token(
    place: Place, server: tuple[Server, str, str]
) -> None:
    running, agent, admin = server
    data = payload("claude-code", "session-start", str(place.repo))
    answer, _ = hook(
        place,
        "claude-code",
        "session-start",
        data,
        LORESTORE_URL=running.url,
        LORESTORE_TOKEN=agent,
    )
    assert LESSON in context_of("claude-code", answer)
    assert log_lines(place) == []
    # A person's token is refused: an empty answer, and the reason in the log.
    answer, _ = hook(
        place,
        "claude-code",
        "session-start",
        data,
        LORESTORE_URL=running.url,
        LORESTORE_TOKEN=admin,
    )
    assert answer == {}
    assert any("forbidden" in line or "person" in line for line in log_lines(place))


def test_a_server_that_is_down_answers_empty_in_time(place: Place) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    answer, took = hook(
        place,
        "cursor",
        "session-start",
        payload("cursor", "session-start", str(place.repo)),
        LORESTORE_URL=url,
        LORESTORE_TOKEN="ls_whatever",
    )
    assert answer == {}
    assert took < DEADLINE_S + 3
    assert log_lines(place)


def test_doctor_checks_the_servers_token(
    place: Place, server: tuple[Server, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    running, agent, admin = server
    monkeypatch.setenv("LORESTORE_URL", running.url)
    monkeypatch.setenv("LORESTORE_TOKEN", agent)
    code, out, _ = place.run("doctor", "--json", "--deep")
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert code == 0, checks
    assert "token valid (write" in checks["server"]["detail"]
    assert checks["round trip"]["ok"]
    monkeypatch.setenv("LORESTORE_TOKEN", admin)
    code, out, _ = place.run("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert code == 1 and not checks["server"]["ok"]
    assert "token create" in checks["server"]["fix"]
    monkeypatch.setenv("LORESTORE_TOKEN", "ls_not_a_token")
    code, out, _ = place.run("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert code == 1 and not checks["server"]["ok"] and checks["server"].get("fix")
