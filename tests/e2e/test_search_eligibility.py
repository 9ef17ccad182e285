"""An agent's search applies recall's rules, through the real handlers: over the stdio MCP
server (the SDK client; context from git) and REST with a write token (both backends), a
disputed lesson, one shadowed by a narrower lesson of the same key and one held by the
`commit` revision policy never come back, beside lessons that do (the controls);
`include_held` shows them with their reasons; a person's search (the CLI on the embedded
store, a review token) shows everything, labelled."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Cli
from tests.gitrepo import git, make_work_tree
from tests.serving import Api, api_on_both_backends
from tests.stdio import Tools, run_mcp

from lorestore.auth.actor import local_actor
from lorestore.models import TokenCreateParams

OLD = "0" * 40
SERVED = {"deploy-good", "deploy-steps@branch"}
WITHHELD = {
    "deploy-disputed": ["disputed"],
    "deploy-old-commit": ["revision_mismatch"],
    "deploy-steps@global": ["shadowed_by:branch::{repo}::main"],
}


def populate(run: Callable[..., Any], repo: str, head: str) -> None:
    """The lessons, written by the person (``run`` takes a CLI-style operation call)."""
    scope = f"repo::{repo}"
    run("memory_policy", scope=scope, revision_policy="commit")
    for key, value, commit in (
        ("deploy-good", "Deploy with the release script.", head),
        ("deploy-disputed", "Deploy by hand over ssh.", head),
        ("deploy-old-commit", "Deploy with the old makefile target.", OLD),
    ):
        run("memory_write", scope=scope, key=key, value=value, source={"commit": commit})
    run("memory_dispute", scope=scope, key="deploy-disputed", reason="unsafe")
    run("memory_write", scope="global", key="deploy-steps", value="Deploy steps: tag first.")
    run(
        "memory_write",
        scope=f"branch::{repo}::main",
        key="deploy-steps",
        value="On main, deploy from the release branch only.",
    )


def named(hits: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each hit as key@rung (for the key at two scopes) -> its held reasons."""
    out = {}
    for hit in hits:
        lesson = hit["lesson"]
        key = lesson["key"]
        if key == "deploy-steps":
            key += "@" + lesson["scope"].split("::")[0]
        out[key] = hit["held"]
    return out


def expected_held(repo: str) -> dict[str, list[str]]:
    return {k: [r.format(repo=repo) for r in v] for k, v in WITHHELD.items()}


@pytest.fixture
def work_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_work_tree(tmp_path, monkeypatch)


def cli_run(cli: Cli) -> Callable[..., Any]:
    def run(operation: str, **data: Any) -> Any:
        from lorestore.cli.backend import open_backend
        from lorestore.config import load_settings
        from lorestore.operations import BY_NAME

        backend = open_backend(load_settings(use_login=False), local_actor())
        op = BY_NAME[operation]
        return backend.invoke(op, op.parse(data))

    return run


def test_stdio_agent_search_withholds_what_recall_would(
    cli: Cli, work_tree: Path, home: Path
) -> None:
    head = git(work_tree, "rev-parse", "HEAD")
    populate(cli_run(cli), "example/app", head)

    async def agent(tools: Tools) -> None:
        result = await tools.ok("memory_search", query="deploy")
        assert result["scopes"] == [
            "branch::example/app::main",
            "repo::example/app",
            "global",
        ]
        assert named(result["hits"]) == {key: [] for key in SERVED}
        assert result["withheld"] == 3
        assert "<<<lorestore search" in result["text"] and "release script" in result["text"]
        assert "over ssh" not in result["text"]
        shown = await tools.ok("memory_search", query="deploy", include_held=True)
        held = {k: v for k, v in named(shown["hits"]).items() if v}
        assert held == expected_held("example/app")
        # Named scopes, context from git: the same rules on the same ladder.
        scoped = await tools.ok(
            "memory_search", query="deploy", scopes=["repo::example/app", "global"]
        )
        assert set(named(scoped["hits"])) == {"deploy-good"}

    run_mcp(home, agent, cwd=work_tree)
    # A person's search at the CLI shows everything, each hit labelled.
    person = cli.ok("search", "deploy")
    assert named(person["hits"]) == {key: [] for key in SERVED} | expected_held("example/app")
    labels = {h["lesson"]["key"]: h["label"] for h in person["hits"]}
    assert labels["deploy-disputed"] == "disputed" and labels["deploy-good"] == "unverified"
    table = cli("search", "deploy")
    assert table.exit_code == 0 and "hold: disputed" in table.stdout


api = api_on_both_backends()


def test_rest_write_token_search_withholds_what_recall_would(api: Api) -> None:
    alice = local_actor(principal="user:alice", session="setup")

    def run(operation: str, **data: Any) -> Any:
        from lorestore.operations import BY_NAME

        op = BY_NAME[operation]
        return op.invoke(api.service, alice, op.parse(data))

    head = "1" * 40
    populate(run, "acme/app", head)
    mint = api.service.token_create

    def token(permission: str) -> str:
        params = TokenCreateParams.model_validate({"name": permission, "permission": permission})
        return mint(alice, params).token

    agent, person = token("write"), token("review")
    context = {"repo": "acme/app", "branch": "main", "revision": head}
    result = api.ok("memory_search", {"query": "deploy", **context}, token=agent)
    assert named(result["hits"]) == {key: [] for key in SERVED}
    assert result["withheld"] == 3
    shown = api.ok(
        "memory_search", {"query": "deploy", **context, "include_held": True}, token=agent
    )
    assert {k: v for k, v in named(shown["hits"]).items() if v} == expected_held("acme/app")
    everything = api.ok("memory_search", {"query": "deploy", **context}, token=person)
    assert named(everything["hits"]) == {key: [] for key in SERVED} | expected_held("acme/app")
    assert everything["withheld"] == 0
    # At another commit the revision policy turns: the old-commit lesson is served (control).
    other = api.ok("memory_search", {"query": "deploy", **context, "revision": OLD}, token=agent)
    assert "deploy-old-commit" in named(other["hits"]) and "deploy-good" not in named(other["hits"])
