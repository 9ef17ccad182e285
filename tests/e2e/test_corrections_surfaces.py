"""Negative evals through the real handlers: the CLI (a person) and the spawned MCP server
(an agent), each refusal beside a positive control."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Cli
from tests.stdio import Tools, run_mcp

S = "repo::acme/app"
WRONG = "Disable the flaky payment test when CI is red"
RIGHT = "Quarantine the flaky payment test and open an issue"


def test_cli_reject_hides_everywhere_and_refuses_reassertion(cli: Cli) -> None:
    cli.ok("write", S, "flaky", WRONG)
    cli.ok("write", S, "right", RIGHT)
    assert cli.ok("reject", S, "flaky", "--reason", "hides a real race")["lesson"]["trust"] == (
        "rejected"
    )
    assert cli("read", S, "flaky", "--json").error()["code"] == "not_found"
    assert cli.ok("read", S, "right")["lesson"]["value"] == RIGHT
    assert [x["key"] for x in cli.ok("list", S)["lessons"]] == ["right"]
    hits = cli.ok("search", WRONG, "-s", S, "--limit", "100")["hits"]
    assert [h["lesson"]["key"] for h in hits] == ["right"]
    assert cli.ok("history", S, "flaky")["versions"][0]["value"] == WRONG  # for the reviewer
    before = cli.ok("audit")["events"]
    for scope, key, value in [
        (S, "flaky", WRONG),
        (S, "other", WRONG),
        ("branch::acme/app::main", "flaky", WRONG),
        (S, "flaky", WRONG.upper()),
        (S, "flaky", WRONG.replace(" ", "   ")),
        (S, "flaky", WRONG.replace("D", "\uff24")),
    ]:
        refused = cli("write", scope, key, value, "--json")
        assert refused.exit_code == 1
        error = refused.error()
        assert error["code"] == "rejected_value" and "hides a real race" in error["message"]
        # The refusal names the rejected lesson, and the command that lifts its rejection.
        assert error["details"]["key"] == "flaky"
        assert f"lorestore reject {S} flaky --undo --reason" in error["hint"]
    assert cli.ok("audit")["events"] == before  # the refusals changed nothing
    assert cli.ok("write", S, "flaky", RIGHT + " today")["result"] == "updated"


def test_cli_reject_requires_reason_and_verify_cannot_launder(cli: Cli) -> None:
    cli.ok("write", S, "flaky", WRONG)
    missing = cli("reject", S, "flaky", "--json")
    assert missing.exit_code == 2 and missing.error()["code"] == "invalid_argument"
    cli.ok("reject", S, "flaky", "--reason", "wrong")
    laundering = cli("verify", S, "flaky", "--json")
    assert laundering.exit_code == 1 and laundering.error()["code"] == "conflict"
    assert cli.ok("reject", S, "flaky", "--undo", "--reason", "fine")["lesson"]["trust"] == (
        "candidate"
    )
    assert cli.ok("verify", S, "flaky")["lesson"]["trust"] == "verified"


def test_mcp_agent_cannot_review_person_can(home: Path, cli: Cli) -> None:
    cli.ok("write", S, "k", "a lesson")

    async def agent(tools: Tools) -> None:
        for name, extra in (
            ("memory_verify", {}),
            ("memory_reject", {"reason": "no"}),
            ("memory_delete", {}),
        ):
            error = await tools.error(name, scope=S, key="k", **extra)
            assert error["code"] == "forbidden", name
        assert (await tools.ok("memory_read", scope=S, key="k"))["lesson"]["trust"] == ("candidate")
        disputed = await tools.ok("memory_dispute", scope=S, key="k", reason="looks stale")
        assert disputed["lesson"]["trust"] == "disputed"

    run_mcp(home, agent)
    assert cli.ok("verify", S, "k")["lesson"]["trust"] == "verified"  # the person can


def test_mcp_sees_a_rejection_and_cannot_reassert_it(home: Path, cli: Cli) -> None:
    cli.ok("write", S, "flaky", WRONG)
    cli.ok("write", S, "right", RIGHT)
    cli.ok("reject", S, "flaky", "--reason", "hides a real race")

    async def agent(tools: Tools) -> None:
        assert (await tools.error("memory_read", scope=S, key="flaky"))["code"] == "not_found"
        assert (await tools.ok("memory_read", scope=S, key="right"))["lesson"]["value"] == RIGHT
        hits = await tools.ok("memory_search", query=WRONG, scopes=[S], limit=100)
        assert [h["lesson"]["key"] for h in hits["hits"]] == ["right"]
        assert (await tools.error("memory_history", scope=S, key="flaky"))["code"] == ("not_found")
        for key, value in (("flaky", WRONG), ("elsewhere", WRONG.lower())):
            refused = await tools.error("memory_write", scope=S, key=key, value=value)
            assert refused["code"] == "rejected_value"
        fixed = await tools.ok("memory_write", scope=S, key="flaky", value=RIGHT + " now")
        assert fixed["result"] == "updated"

    run_mcp(home, agent)


def test_three_sessions_corroborate_one_session_does_not(home: Path, cli: Cli) -> None:
    async def thrice(tools: Tools) -> None:
        for _ in range(3):
            out = await tools.ok("memory_write", scope=S, key="k", value="same lesson")
        assert (out["lesson"]["seen_count"], out["lesson"]["trust"]) == (1, "candidate")

    run_mcp(home, thrice)

    async def once(tools: Tools) -> None:
        await tools.ok("memory_write", scope=S, key="k", value="same lesson")

    run_mcp(home, once)
    run_mcp(home, once)
    lesson = cli.ok("read", S, "k")["lesson"]
    assert (lesson["seen_count"], lesson["trust"]) == (3, "corroborated")


def test_proposed_revision_from_an_agent_waits_for_the_person(home: Path, cli: Cli) -> None:
    cli.ok("write", S, "k", "Run tests against Postgres 14")
    cli.ok("verify", S, "k")

    async def agent(tools: Tools) -> None:
        out = await tools.ok(
            "memory_write", scope=S, key="k", value="Run tests against Postgres 16"
        )
        assert out["result"] == "proposed"
        served = (await tools.ok("memory_read", scope=S, key="k"))["lesson"]
        assert (served["value"], served["pending_revision"]) == (
            "Run tests against Postgres 14",
            True,
        )

    run_mcp(home, agent)
    queue = cli.ok("review-queue")["items"]
    assert [(i["reason"], i["proposed"]["value"]) for i in queue] == [
        ("revision", "Run tests against Postgres 16")
    ]
    assert cli.ok("read", S, "k")["lesson"]["value"] == "Run tests against Postgres 14"
    cli.ok("verify", S, "k", "--revision", "--note", "CI moved")
    assert cli.ok("read", S, "k")["lesson"]["value"] == "Run tests against Postgres 16"


def test_cli_a_rejected_revision_can_be_lifted(cli: Cli) -> None:
    cli.ok("write", S, "pg", "Integration tests need Postgres 15")
    cli.ok("verify", S, "pg")
    assert cli.ok("write", S, "pg", "Integration tests need Postgres 16")["result"] == "proposed"
    cli.ok("reject", S, "pg", "--revision", "--reason", "it is 15")
    refused = cli("write", S, "pg", "Integration tests need Postgres 16", "--json")
    assert refused.error()["code"] == "rejected_value"
    assert f"lorestore reject {S} pg --undo --revision --reason" in refused.error()["hint"]
    # The lesson itself is verified, not rejected: --undo alone says so and where to look.
    wrong = cli("reject", S, "pg", "--undo", "--reason", "ok", "--json")
    assert wrong.exit_code == 1 and wrong.error()["code"] == "conflict"
    assert "--revision" in wrong.error()["hint"]
    lifted = cli.ok("reject", S, "pg", "--undo", "--revision", "--reason", "16 after all")
    assert lifted["lesson"]["trust"] == "verified"
    again = cli.ok("write", S, "pg", "Integration tests need Postgres 16")
    assert again["result"] == "proposed"  # the value may be proposed again
    history = cli.ok("history", S, "pg")["versions"]
    assert [v["state"] for v in history] == ["accepted", "rejected", "proposed"]
    # Nothing left to lift is said so.
    nothing = cli("reject", S, "pg", "--undo", "--revision", "--reason", "x", "--json")
    assert nothing.exit_code == 1 and nothing.error()["code"] == "not_found"


def test_cli_lifting_a_lessons_earlier_rejections_leaves_other_lessons_rejections(
    cli: Cli,
) -> None:
    cli.ok("write", S, "b", "The original advice")
    cli.ok("verify", S, "b")
    cli.ok("write", S, "b", "Use value x")  # proposed
    cli.ok("reject", S, "b", "--revision", "--reason", "not x")
    cli.ok("reject", S, "b", "--undo", "--revision", "--reason", "x was fine for b")
    cli.ok("write", S, "a", "Use value x")
    cli.ok("reject", S, "a", "--reason", "x is wrong for a")
    cli.ok("write", S, "b", "Use value z")  # proposed
    cli.ok("reject", S, "b", "--revision", "--reason", "not z")
    cli.ok("reject", S, "b", "--undo", "--revision", "--reason", "z was fine")
    assert cli.ok("write", S, "d", "Use value z")["result"] == "created"  # b's lifted
    # a's own rejection of the same value stays.
    again = cli("write", S, "c", "Use value x", "--json").error()
    assert again["code"] == "rejected_value" and again["details"]["key"] == "a"
    assert f"lorestore reject {S} a --undo --reason" in again["hint"]


def test_cli_a_rejected_value_since_corrected_can_still_be_lifted(cli: Cli) -> None:
    cli.ok("write", S, "l", "A bad value")
    cli.ok("reject", S, "l", "--reason", "wrong")
    cli.ok("write", S, "l", "A good value")  # the documented step: a corrected lesson
    refused = cli("write", S, "m", "A bad value", "--json").error()
    assert f"lorestore reject {S} l --undo --revision --reason" in refused["hint"]
    lifted = cli.ok("reject", S, "l", "--undo", "--revision", "--reason", "fine after all")
    assert lifted["lesson"]["value"] == "A good value"
    assert cli.ok("write", S, "m", "A bad value")["result"] == "created"  # the control
