"""Projects through the real handlers: the CLI and the spawned stdio MCP server (the SDK
client) derive the project rung from the checkout's repository, the stdio agent may list but
not declare projects; over REST on both backends, a review token declares, an agent's write
token is refused, and another tenant's declaration never applies (each beside its control)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import Cli, table_rows
from tests.gitrepo import make_work_tree
from tests.serving import Api, api_on_both_backends, error_of
from tests.stdio import Tools, run_mcp

from lorestore.auth.actor import local_actor
from lorestore.models import TokenCreateParams

LESSON = "Deploys of the billing services freeze on Fridays."


@pytest.fixture
def work_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_work_tree(tmp_path, monkeypatch)  # the checkout of example/app


def test_cli_derives_the_project_rung_from_the_checkout(cli: Cli, work_tree: Path) -> None:
    cli.ok("write", "project::billing", "freeze", LESSON)
    cli.ok("write", "project::web", "cdn", "The CDN caches for an hour.")
    before = cli.ok("recall", "--task", "deploy")
    assert before["context"]["projects"] == [] and before["offered"] == []
    added = cli.ok("project", "add", "billing", "example/app", "example/api")
    assert added["repos"] == ["example/api", "example/app"]
    cli.ok("project", "add", "web", "example/site")  # a project this checkout is not in
    after = cli.ok("recall", "--task", "deploy")
    assert after["context"]["ladder"] == [
        "branch::example/app::main",
        "repo::example/app",
        "project::billing",
        "global",
    ]
    assert after["context"]["projects"] == ["billing"]
    assert [o["lesson"]["key"] for o in after["offered"]] == ["freeze"]
    assert cli.ok("explain", after["recall_id"])["context"]["projects"] == ["billing"]
    shown = cli("explain", after["recall_id"])
    assert shown.exit_code == 0 and "project rungs: billing" in shown.stdout
    assert "project rungs: billing" in cli("recall", "--task", "deploy").stdout
    listed = cli.ok("project", "list")["projects"]
    assert [(p["name"], p["repos"]) for p in listed] == [
        ("billing", ["example/api", "example/app"]),
        ("web", ["example/site"]),
    ]
    human = cli("project", "list")
    assert human.exit_code == 0 and "billing" in human.stdout and "example/api" in human.stdout
    bad = cli("project", "add", "billing", "not-a-repo", "--json")
    assert bad.exit_code == 2 and bad.error()["code"] == "invalid_argument"
    missing = cli("project", "remove", "billing", "example/nope", "--json")
    assert missing.exit_code == 1 and missing.error()["code"] == "not_found"
    cli.ok("project", "remove", "billing")
    assert cli.ok("recall", "--task", "deploy")["offered"] == []


def test_stdio_agent_gets_the_project_rung_but_cannot_declare(
    cli: Cli, work_tree: Path, home: Path
) -> None:
    cli.ok("write", "project::billing", "freeze", LESSON)
    cli.ok("project", "add", "billing", "example/app")

    async def agent(tools: Tools) -> None:
        result = await tools.ok("memory_recall", task="deploy the billing service")
        assert result["context"]["repo"] == "example/app"
        assert result["context"]["projects"] == ["billing"]
        assert [o["lesson"]["key"] for o in result["offered"]] == ["freeze"]
        listed = await tools.ok("project_list")
        assert [p["name"] for p in listed["projects"]] == ["billing"]
        names = {t.name for t in (await tools.client.list_tools()).tools}
        assert "project_list" in names and "project_add" not in names
        # Called anyway (the tool is not listed to it), the declaration is refused.
        called = await tools.client.call_tool(
            "project_add", {"name": "web", "repos": ["example/app"]}
        )
        assert called.is_error and called.structured_content["error"]["code"] == "forbidden"

    run_mcp(home, agent, cwd=work_tree)
    assert [p["name"] for p in cli.ok("project", "list")["projects"]] == ["billing"]


api = api_on_both_backends()


def token(api: Api, user: str, permission: str) -> str:
    params = TokenCreateParams.model_validate({"name": user, "permission": permission})
    return api.service.token_create(local_actor(principal=f"user:{user}"), params).token


def test_rest_review_token_declares_and_recall_derives(api: Api) -> None:
    alice, agent = token(api, "alice", "review"), token(api, "alice", "write")
    api.ok(
        "memory_write", {"scope": "project::billing", "key": "freeze", "value": LESSON}, token=agent
    )
    refused = api.post("project_add", {"name": "billing", "repos": ["acme/app"]}, agent)
    assert error_of(refused, 403)["code"] == "forbidden"
    assert table_rows(api.service.store, "project_repos") == []
    before = api.ok("memory_recall", {"repo": "acme/app", "task": "deploy"}, token=agent)
    assert before["context"]["projects"] == [] and before["offered"] == []
    # The control: the person's review token declares it, and the agent's recall derives it.
    api.ok("project_add", {"name": "billing", "repos": ["acme/app"]}, token=alice)
    after = api.ok("memory_recall", {"repo": "acme/app", "task": "deploy"}, token=agent)
    assert after["context"]["projects"] == ["billing"]
    assert [o["lesson"]["key"] for o in after["offered"]] == ["freeze"]
    listed = api.get("project_list", token=agent)
    assert [p["name"] for p in listed.json()["projects"]] == ["billing"]


def test_rest_another_tenants_project_does_not_apply(api: Api) -> None:
    mallory, bob = token(api, "mallory", "review"), token(api, "bob", "review")
    api.ok("project_add", {"name": "billing", "repos": ["acme/app"]}, token=mallory)
    api.ok(
        "memory_write",
        {"scope": "project::billing", "key": "k", "value": "Mallory's."},
        token=mallory,
    )
    api.ok("memory_write", {"scope": "project::billing", "key": "k", "value": "Bob's."}, token=bob)
    theirs = api.ok("memory_recall", {"repo": "acme/app"}, token=bob)
    assert theirs["context"]["projects"] == [] and theirs["offered"] == []
    assert api.ok("project_list", token=bob)["projects"] == []
    api.ok("project_add", {"name": "billing", "repos": ["acme/app"]}, token=bob)  # the control
    own = api.ok("memory_recall", {"repo": "acme/app"}, token=bob)
    assert own["context"]["projects"] == ["billing"]
    assert [o["lesson"]["value"] for o in own["offered"]] == ["Bob's."]
