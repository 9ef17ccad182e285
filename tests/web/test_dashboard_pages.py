"""The dashboard's pages and actions through the real application in process, on both
backends: what each page shows, who sees which controls, what the server refuses, and a
hostile lesson rendered inert."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.serving import Api, backend_api
from tests.web.dashboard import ORIGIN, form_actions, sign_in

from lorestore.auth.actor import local_actor
from lorestore.models import (
    AuditParams,
    DisputeParams,
    OrgParams,
    ReadParams,
    RecallParams,
    TokenCreateParams,
    VerifyParams,
    WriteParams,
)

S = "repo::acme/app"
HOSTILE = (
    "Watch out <script>document.title='owned'</script> here.\n\n"
    '<img src="x" onerror="document.title=\'owned\'">\n\n'
    "[click me](javascript:alert(1)) and [docs](https://example.com/ci) and "
    "![tracker](https://tracker.example/pixel.png)"
)


@pytest.fixture(params=["sqlite", "postgres"])
def api(
    request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Api]:
    yield from backend_api(request, home, monkeypatch, dashboard_origin=ORIGIN)


def write(api: Api, key: str, value: str, scope: str = S, **kw: object) -> None:
    params = WriteParams.model_validate({"scope": scope, "key": key, "value": value, **kw})
    api.service.memory_write(local_actor(session="s1"), params)


def trust_of(api: Api, key: str) -> str:
    return api.service.memory_read(local_actor(), ReadParams(scope=S, key=key)).lesson.trust


def test_every_page_answers_a_signed_in_admin(api: Api) -> None:
    write(api, "pg-port", "The test database listens on 5432.", tags=["postgres"])
    write(api, "pg-port", "The test database listens on 5433 since the CI move.")
    write(api, "other", "Prefer small functions", scope="repo::other/app")
    recall = api.service.memory_recall(local_actor(), RecallParams(repo="acme/app", task="db"))
    person = sign_in(api, api.token)
    for path, params, expected in [
        ("/overview", {}, "Lessons per scope"),
        ("/lessons", {"scope": S}, "pg-port"),
        ("/lessons", {"scope": "repo::", "q": "database"}, "pg-port"),
        ("/lesson", {"scope": S, "key": "pg-port"}, "Version 2"),
        ("/review", {}, "Review queue"),
        ("/recall", {"id": recall.recall_id}, "Offered (1)"),
        ("/audit", {"scope": S}, "write.updated"),
        ("/admin", {}, "Create token"),
    ]:
        answer = person.page(path, **params)
        assert answer.status_code == 200, (path, answer.text)
        assert expected in answer.text, path
        assert answer.headers["content-security-policy"].startswith("default-src 'none'")
    overview = person.page("/overview").text  # one candidate here, one there; none verified
    assert '<span class="card trust-candidate"><strong>2</strong> candidate</span>' in overview
    assert '<span class="card trust-verified"><strong>0</strong> verified</span>' in overview
    lesson = person.page("/lesson", scope=S, key="pg-port").text
    # The diff between the versions, side by side: the old line beside the new one.
    assert '<tr class="replace"><td class="old">The test database listens on 5432.</td>' in lesson
    # The recall that offered it, with why, linked to the recall's explanation.
    assert f'<a href="/recall?id={recall.recall_id}">{recall.recall_id[:8]}</a>' in lesson
    assert '<td class="offered">offered v2</td>' in lesson
    assert (
        "No recall offered or held it."
        in person.page("/lesson", scope="repo::other/app", key="other").text
    )


def test_signed_out_pages_lead_to_sign_in(api: Api) -> None:
    person = sign_in(api, api.token)
    for path in ("/overview", "/lessons", "/lesson", "/review", "/recall", "/audit", "/admin"):
        answer = person.page(path, **({"scope": S, "key": "k"} if path == "/lesson" else {}))
        assert answer.status_code in (200, 404), path  # control: signed in (no lesson k)
    from starlette.testclient import TestClient

    stranger = TestClient(api.client.app, base_url=ORIGIN)
    for path in ("/overview", "/lessons", "/review", "/admin"):
        answer = stranger.get(path, follow_redirects=False)
        assert answer.status_code == 303 and answer.headers["location"].startswith("/signin")


def test_the_hash_chains_are_verified_in_the_background_from_the_audit_page(api: Api) -> None:
    write(api, "pg-port", "The test database listens on 5432.")
    person = sign_in(api, api.token)
    before = person.page("/audit").text
    assert "/audit/verify" in form_actions(before) and "Hash chains" not in before
    # A POST without its CSRF token starts nothing (the control: the same POST with it does).
    assert person.post("/audit/verify", {}, csrf=False).status_code == 403
    assert "Hash chains" not in person.page("/audit").text
    started = person.post("/audit/verify", {})
    assert started.status_code == 303 and started.headers["location"] == "/audit"
    deadline = time.monotonic() + 30
    while "Verifying the hash chains" in (text := person.page("/audit").text):
        assert "/audit/verify" not in form_actions(text)  # one run at a time
        assert time.monotonic() < deadline, "the verification did not finish"
        time.sleep(0.02)
    assert "Hash chains: all 1 verified" in text and "Verify again" in text
    # A session of another token shows none of it, even the same person's: the run was
    # computed with the first token's rights.
    other = api.service.token_create(
        local_actor(), TokenCreateParams(name="viewer", permission="read")
    ).token
    assert "Hash chains" not in sign_in(api, other).page("/audit").text


def test_a_reviewer_decides_from_the_queue_and_the_audit_names_them(api: Api) -> None:
    write(api, "flaky", "Disable the flaky payment test when CI is red")
    write(api, "verified", "Run migrations before the tests")
    api.service.memory_verify(local_actor(), VerifyParams(scope=S, key="verified"))
    write(api, "verified", "Run migrations before the tests, with --check")  # proposed
    write(api, "doubt", "Port 8080 is free in CI")
    api.service.memory_dispute(local_actor(), DisputeParams(scope=S, key="doubt", reason="?"))
    reviewer = api.mint(name="lead", permission="review")
    person = sign_in(api, reviewer)
    queue = person.page("/review").text
    assert {"/review/accept-revision", "/review/reject-revision", "/review/dismiss-dispute"} <= set(
        form_actions(queue)
    )
    assert "with --check" in queue  # the proposed revision, beside the served value
    missing = person.post("/review/reject", {"scope": S, "key": "flaky", "reason": " "})
    assert missing.status_code == 400 and trust_of(api, "flaky") == "candidate"
    rejected = person.post("/review/reject", {"scope": S, "key": "flaky", "reason": "hides a race"})
    assert rejected.status_code == 303
    shown = person.client.get(rejected.headers["location"]).text
    assert f"Rejected {S} / flaky" in shown
    accepted = person.post("/review/accept-revision", {"scope": S, "key": "verified"})
    assert accepted.status_code == 303
    lesson = api.service.memory_read(local_actor(), ReadParams(scope=S, key="verified")).lesson
    assert lesson.value.endswith("--check") and lesson.trust == "verified"
    dismissed = person.post("/review/dismiss-dispute", {"scope": S, "key": "doubt"})
    assert dismissed.status_code == 303 and trust_of(api, "doubt") == "verified"
    events = api.service.memory_audit(local_actor(), AuditParams(scope=S)).events
    decided = {e.action: e for e in events if e.action in ("reject", "verify.revision", "verify")}
    assert set(decided) == {"reject", "verify.revision", "verify"}
    assert all(e.actor == "user:local" for e in decided.values())  # the token's person
    assert decided["reject"].reason == "hides a race"


@pytest.mark.parametrize("permission", ["read", "write"])
def test_a_token_without_review_sees_no_controls_and_a_forged_post_is_refused(
    api: Api, permission: str
) -> None:
    write(api, "flaky", "Disable the flaky payment test when CI is red")
    api.service.memory_dispute(local_actor(), DisputeParams(scope=S, key="flaky", reason="?"))
    person = sign_in(api, api.mint(name="agent", permission=permission))
    queue = person.page("/review")
    assert queue.status_code == 200 and "flaky" in queue.text
    assert form_actions(queue.text) == ["/signout"]  # no review form at all
    assert "/admin" not in person.page("/overview").text
    for path, data in [
        ("/review/verify", {"scope": S, "key": "flaky"}),
        ("/review/reject", {"scope": S, "key": "flaky", "reason": "forged"}),
        ("/admin/tokens/create", {"name": "x", "permission": "read"}),
    ]:
        forged = person.post(path, data)  # with the session's own CSRF token: still refused
        assert forged.status_code == 403, (path, forged.text)
        assert 'data-code="forbidden"' in forged.text
    assert person.page("/admin").status_code == 403
    assert trust_of(api, "flaky") == "disputed"
    control = sign_in(api, api.mint(name="lead", permission="review"))
    assert control.post("/review/verify", {"scope": S, "key": "flaky"}).status_code == 303
    assert trust_of(api, "flaky") == "verified"


def test_a_hostile_lesson_renders_inert(api: Api) -> None:
    write(api, "hostile", HOSTILE)
    person = sign_in(api, api.token)
    page = person.page("/lesson", scope=S, key="hostile").text
    value = page.split('<article class="value">', 1)[1].split("</article>", 1)[0]
    assert "<script" not in value and "&lt;script&gt;" in value  # shown as text
    assert "<img" not in value and "onerror" not in value.replace("onerror=&quot;", "")
    assert "&lt;img" in value  # the raw HTML is text
    assert 'href="javascript:' not in value and "[click me](javascript:alert(1))" in value
    assert '<a href="https://example.com/ci" rel="nofollow noopener noreferrer">docs</a>' in value
    # The remote image is a link to it, never loaded.
    assert "[image: tracker]</a>" in value and "https://tracker.example/pixel.png" in value
    assert "<script" not in page  # and the page itself runs nothing


def test_admin_creates_a_token_shown_once_and_revokes_it(api: Api) -> None:
    person = sign_in(api, api.token)
    created = person.post(
        "/admin/tokens/create", {"name": "ci", "permission": "write", "expires_days": "30"}
    )
    assert created.status_code == 200 and "shown this once" in created.text
    secret = created.text.split('<code class="token">', 1)[1].split("</code>", 1)[0]
    assert secret.startswith("lst_")
    assert api.get("memory_scopes", token=secret).status_code == 200  # it works
    assert secret not in person.page("/admin").text  # and is never shown again
    token_id = next(t["id"] for t in api.ok("token_list")["tokens"] if t["name"] == "ci")
    revoked = person.post("/admin/tokens/revoke", {"id": token_id})
    assert revoked.status_code == 303
    assert api.get("memory_scopes", token=secret).status_code == 401


def test_admin_orgs_invites_bindings_and_policies(api: Api) -> None:
    person = sign_in(api, api.token)
    assert person.post("/admin/orgs/create", {"slug": "acme"}).status_code == 303
    invite = person.post("/admin/orgs/invite", {"org": "acme", "user": "bob", "role": "viewer"})
    assert invite.status_code == 200 and "shown this once" in invite.text
    bound = person.post("/admin/orgs/bind", {"org": "acme", "pattern": "repo::acme/*"})
    assert bound.status_code == 303
    policy = person.post(
        "/admin/policy", {"scope": S, "revision_policy": "commit", "require_review": "on"}
    )
    assert policy.status_code == 303
    page = person.page("/admin").text
    assert "acme" in page and "user:bob" in page and "pending" in page
    # The binding is listed, with a form that unbinds it (the control: it routes until then).
    assert "<td>repo::acme/*</td><td>routes</td>" in page
    unbind = page.split("<td>repo::acme/*</td>", 1)[1].split("</form>", 1)[0]
    assert 'action="/admin/orgs/unbind"' in unbind and 'name="csrf_token"' in unbind
    assert api.service.org_bindings(local_actor(), OrgParams(org="acme")).bindings
    bad = person.post("/admin/orgs/create", {"slug": "Not A Slug!"})
    assert bad.status_code == 400  # a clear refusal, nothing created
    assert "not a slug" not in person.page("/admin").text.lower()


def test_the_lessons_page_filters_by_prefix_trust_state_and_pages(api: Api) -> None:
    for n in range(55):
        write(api, f"k{n:02}", f"lesson number {n}", scope=S if n % 2 else "repo::acme/api")
    write(api, "other", "a lesson elsewhere", scope="repo::other/app")
    api.service.memory_verify(local_actor(), VerifyParams(scope=S, key="k01"))
    person = sign_in(api, api.token)
    first = person.page("/lessons", scope="repo::acme/").text
    assert "k54" in first and "other" not in first
    assert first.count('<a href="/lesson?') == 50
    more = first.split('<a class="next" href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    second = person.client.get(more).text
    assert second.count('<a href="/lesson?') == 5 and "k00" in second
    verified = person.page("/lessons", scope="repo::", trust="verified").text
    assert verified.count('<a href="/lesson?') == 1 and "k01" in verified
    agent = sign_in(api, api.mint(name="agent", permission="write"))
    assert agent.page("/lessons", scope=S, state="archived").status_code == 403
    assert person.page("/lessons", scope=S, state="archived").status_code == 200  # control
