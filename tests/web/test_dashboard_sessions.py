"""Sign-in, sessions, CSRF and the Host check of the dashboard, through the real application
in process, on both backends where the store is involved."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from tests.serving import Api, backend_api, make_api
from tests.web.dashboard import ORIGIN, csrf_of, sign_in

from lorestore.auth.actor import local_actor
from lorestore.models import TokenRevokeParams, WriteParams
from lorestore.web.app import SESSION_COOKIE


@pytest.fixture(params=["sqlite", "postgres"])
def api(
    request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Api]:
    yield from backend_api(request, home, monkeypatch, dashboard_origin=ORIGIN)


def test_root_leads_to_a_plain_sign_in_form(api: Api) -> None:
    client = TestClient(api.client.app, base_url=ORIGIN)
    root = client.get("/", follow_redirects=False)
    assert root.status_code == 303 and root.headers["location"] == "/signin"
    page = client.get("/signin")
    assert '<form method="post" action="/signin">' in page.text
    assert 'name="token"' in page.text and 'name="csrf_token"' in page.text
    assert "<script" not in page.text  # works without JavaScript: there is none


def test_a_session_cookie_is_httponly_and_samesite_strict(api: Api) -> None:
    person = sign_in(api, api.token)
    cookie = next(c for c in person.client.cookies.jar if c.name == SESSION_COOKIE)
    assert cookie.has_nonstandard_attr("HttpOnly")
    assert cookie.get_nonstandard_attr("SameSite", "").lower() == "strict"  # type: ignore[union-attr]
    assert not cookie.secure  # served over http here; see the https test below
    assert person.page("/overview").status_code == 200


def test_an_https_origin_makes_the_cookie_secure(home: Path) -> None:
    for api in make_api(home, dashboard_origin="https://127.0.0.1"):
        client = TestClient(api.client.app, base_url="https://127.0.0.1")
        form = client.get("/signin")
        answer = client.post(
            "/signin",
            data={"token": api.token, "csrf_token": csrf_of(form.text)},
            follow_redirects=False,
        )
        assert answer.status_code == 303
        set_cookie = answer.headers["set-cookie"].lower()
        assert (
            "secure" in set_cookie and "httponly" in set_cookie and "samesite=strict" in set_cookie
        )


def test_a_wrong_token_gets_no_session(api: Api) -> None:
    client = TestClient(api.client.app, base_url=ORIGIN)
    for token in ("lst_" + "x" * 40, "not a token"):
        form = client.get("/signin")
        answer = client.post(
            "/signin",
            data={"token": token, "csrf_token": csrf_of(form.text)},
            follow_redirects=False,
        )
        assert answer.status_code == 401
        assert SESSION_COOKIE not in answer.cookies
    assert client.get("/overview", follow_redirects=False).status_code == 303  # control: still out


def test_sign_in_without_its_csrf_token_fails(api: Api) -> None:
    client = TestClient(api.client.app, base_url=ORIGIN)
    client.get("/signin")
    answer = client.post("/signin", data={"token": api.token}, follow_redirects=False)
    assert answer.status_code == 403 and "csrf_failed" in answer.text
    assert SESSION_COOKIE not in answer.cookies


def test_sign_out_deletes_the_session_on_the_server(api: Api) -> None:
    person = sign_in(api, api.token)
    old = person.session_id
    assert person.post("/signout", {}).status_code == 303
    # The old cookie, presented again (as a copy taken before sign-out would be), opens nothing.
    again = TestClient(api.client.app, base_url=ORIGIN, cookies={SESSION_COOKIE: old})
    answer = again.get("/overview", follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"].startswith("/signin")
    other = sign_in(api, api.token)  # control: a new sign-in works
    assert other.page("/overview").status_code == 200


def test_revoking_the_token_ends_its_sessions(api: Api) -> None:
    reviewer = api.mint(name="reviewer", permission="review")
    person = sign_in(api, reviewer)
    assert person.page("/review").status_code == 200
    info = next(
        t for t in api.service.token_list(local_actor(), _no()).tokens if t.name == "reviewer"
    )
    api.service.token_revoke(local_actor(), TokenRevokeParams(id=info.id))
    answer = person.page("/review")
    assert answer.status_code == 303 and "ended=1" in answer.headers["location"]


def test_a_post_without_the_csrf_token_changes_nothing(api: Api) -> None:
    api.service.memory_write(local_actor(), WriteParams(scope="global", key="k", value="v one"))
    person = sign_in(api, api.token)
    answer = person.post("/review/verify", {"scope": "global", "key": "k"}, csrf=False)
    assert answer.status_code == 403 and "csrf_failed" in answer.text
    forged = dataclasses.replace(person, csrf="x" * 43)
    assert forged.post("/review/verify", {"scope": "global", "key": "k"}).status_code == 403
    assert _trust(api) == "candidate"
    done = person.post("/review/verify", {"scope": "global", "key": "k"})  # control
    assert done.status_code == 303
    assert _trust(api) == "verified"


def test_the_host_header_must_name_the_origin(api: Api) -> None:
    person = sign_in(api, api.token)
    evil = person.client.get("/overview", headers={"host": "evil.example"})
    assert evil.status_code == 421
    cross = person.client.post(
        "/signout",
        data={"csrf_token": person.csrf},
        headers={"origin": "http://evil.example"},
        follow_redirects=False,
    )
    assert cross.status_code == 403
    assert person.page("/overview").status_code == 200  # control: the session is still live
    # The loopback names of one machine are one origin (a browser at localhost is at home).
    assert person.client.get("/overview", headers={"host": "localhost"}).status_code == 200
    null = person.client.post(
        "/signout",
        data={"csrf_token": person.csrf},
        headers={"origin": "null"},
        follow_redirects=False,
    )
    assert null.status_code == 403


def test_rest_and_mcp_keep_bearer_authentication(api: Api) -> None:
    person = sign_in(api, api.token)
    # A dashboard session is no credential for the API: its cookie gets the API's 401.
    assert person.client.get("/api/v1/memory_scopes").status_code == 401
    assert person.client.post("/mcp", json={}).status_code == 401
    assert api.get("memory_scopes").status_code == 200  # control: with the bearer token


def _no():  # type: ignore[no-untyped-def]
    from lorestore.models import NoParams

    return NoParams()


def _trust(api: Api) -> str:
    from lorestore.models import ReadParams

    return api.service.memory_read(local_actor(), ReadParams(scope="global", key="k")).lesson.trust
