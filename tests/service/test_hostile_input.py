"""Input a reviewer crafted to break the store: NUL characters, booleans for numbers,
hand-made cursors, letters whose lower case is two characters, and queries of stop words.
Each refusal is checked on both backends through the catalog (as every surface parses its
arguments), beside a positive control, and then through the CLI and MCP where the surface
matters."""

from __future__ import annotations

import base64
import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Cli
from tests.stdio import Tools, run_mcp

from lorestore.auth.actor import local_actor
from lorestore.core.errors import LorestoreError
from lorestore.operations import BY_NAME
from lorestore.service import LessonService

S = "repo::acme/app"


def call(service: LessonService, operation: str, **arguments: Any) -> dict[str, Any]:
    """Run an operation as a surface does: parse the raw arguments, then invoke the service."""
    op = BY_NAME[operation]
    actor = local_actor(session=str(arguments.pop("_session", "s1")))
    result: dict[str, Any] = op.invoke(service, actor, op.parse(arguments)).model_dump()
    return result


def refused(service: LessonService, operation: str, **arguments: Any) -> LorestoreError:
    with pytest.raises(LorestoreError) as err:
        call(service, operation, **arguments)
    assert err.value.bad_input and err.value.hint, err.value.to_dict()
    return err.value


def cursor(*parts: object) -> str:
    raw = json.dumps(list(parts), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def mark_of(issued: str) -> str:
    """The listing a cursor was issued for (its last part)."""
    return str(json.loads(base64.urlsafe_b64decode(issued + "=" * (-len(issued) % 4)))[-1])


def test_nul_is_refused_in_every_string_on_both_backends(service: LessonService) -> None:
    assert refused(service, "memory_write", scope=S, key="k", value="a\x00b").code == (
        "invalid_value"
    )
    assert refused(service, "memory_write", scope=S, key="k\x00", value="v").code == ("invalid_key")
    assert refused(service, "memory_write", scope=S, key="k", value="v", tags=["a\x00"]).code == (
        "invalid_tags"
    )
    source = refused(service, "memory_write", scope=S, key="k", value="v", source={"url": "\x00"})
    assert (source.code, source.details["field"]) == ("invalid_argument", "source.url")
    assert refused(service, "memory_recall", repo="acme/app", task="\x00").code == (
        "invalid_argument"
    )
    assert call(service, "memory_scopes")["scopes"] == []  # nothing was stored
    # Positive controls: the same calls without the NUL.
    assert call(service, "memory_write", scope=S, key="k", value="ab", source={"url": "u"})
    assert refused(service, "memory_archive", scope=S, key="k", reason="why\x00").code == (
        "invalid_argument"
    )
    assert refused(service, "memory_dispute", scope=S, key="k", reason="\x00").code == (
        "invalid_argument"
    )
    assert call(service, "memory_read", scope=S, key="k")["lesson"]["status"] == "active"
    assert call(service, "memory_archive", scope=S, key="k", reason="why")["lesson"]["status"] == (
        "archived"
    )
    recalled = call(service, "memory_recall", repo="acme/app", task="deploy notes")
    assert recalled["recall_id"]


def test_lone_surrogates_are_refused_like_nul_on_both_backends(
    service: LessonService, cli: Cli
) -> None:
    """A lone surrogate (what a non-UTF-8 command-line argument becomes) cannot be stored as
    UTF-8 by either backend: refused with the field's code, never a driver's crash."""
    bad = "\udcff"
    assert refused(service, "memory_write", scope=S, key="k" + bad, value="v").code == (
        "invalid_key"
    )
    assert refused(service, "memory_write", scope=S, key="k", value="v", tags=[bad]).code == (
        "invalid_tags"
    )
    assert refused(service, "memory_read", scope=S, key=bad).code == "invalid_key"
    assert refused(service, "memory_explain", recall_id="x" + bad).code == "invalid_argument"
    assert refused(service, "memory_recall", repo="acme/app", task=bad).code == "invalid_argument"
    assert refused(service, "memory_search", query="x").code == "invalid_scope"  # as with []
    assert call(service, "memory_scopes")["scopes"] == []  # nothing was stored
    written = call(service, "memory_write", scope=S, key="k\u00e9", value="caf\u00e9 \U0001f600")
    assert written["result"] == "created"  # the control: real non-ASCII text is fine
    through_cli = cli("write", "global", "k" + bad, "some value", "--json")
    assert through_cli.exit_code == 2 and through_cli.error()["code"] == "invalid_key"


def test_booleans_are_not_numbers(service: LessonService) -> None:
    write = {"scope": S, "key": "k", "value": "v"}
    assert refused(service, "memory_write", **write, ttl_days=True).code == "invalid_ttl"
    assert refused(service, "memory_write", **write, if_version=False).code == "invalid_argument"
    assert refused(service, "memory_list", scope=S, limit=True).code == "invalid_argument"
    assert refused(service, "memory_recall", repo="acme/app", budget=True).code == (
        "invalid_argument"
    )
    assert call(service, "memory_scopes")["scopes"] == []
    # Positive controls: numbers, and numbers as text (REST query parameters are text).
    created = call(service, "memory_write", **write, ttl_days=1, if_version=0)["lesson"]
    assert created["expires_at"] is not None
    assert len(call(service, "memory_list", scope=S, limit="1")["lessons"]) == 1


def test_hand_made_cursors_are_invalid_cursor(service: LessonService) -> None:
    for key in ("a", "b", "c"):
        call(service, "memory_write", scope=S, key=key, value=f"lesson {key}")
    first = call(service, "memory_list", scope=S, limit=1)
    second = call(service, "memory_list", scope=S, limit=1, cursor=first["next_cursor"])
    assert len(second["lessons"]) == 1  # positive control: an issued cursor pages on
    at = first["lessons"][0]["updated_at"]
    mark = mark_of(first["next_cursor"])
    for bad in (
        cursor("x", True, mark),
        cursor("x", 10**30, mark),
        cursor("x", 5, mark),  # not a time: PostgreSQL would fail casting it
        cursor(at, 0, mark),
        cursor(at, -1, mark),
        cursor(at, 2**63, mark),
        cursor(at + "\x00", 1, mark),
        cursor(at, 1),  # no listing
        cursor(at, 1, "another"),
        first["next_cursor"] + "==",  # padded: not the spelling issued
        "WyJ4Iix0cnVlXQ",
        "not base64!",
        cursor({"a": 1}),
    ):
        assert refused(service, "memory_list", scope=S, cursor=bad).code == "invalid_cursor"
    assert call(service, "memory_list", scope=S, cursor=cursor(at, 2**63 - 1, mark))["lessons"]
    # A cursor is for its own listing: another scope or other tags would skip or repeat rows.
    issued = first["next_cursor"]
    other = "repo::acme/other"
    assert refused(service, "memory_list", scope=other, cursor=issued).code == "invalid_cursor"
    tagged = refused(service, "memory_list", scope=S, tags=["t"], cursor=issued)
    assert tagged.code == "invalid_cursor"
    audit = call(service, "memory_audit", limit=1)
    assert len(call(service, "memory_audit", limit=1, cursor=audit["next_cursor"])["events"]) == 1
    audit_mark = mark_of(audit["next_cursor"])
    for bad in (
        cursor(10**30, audit_mark),
        cursor(True, audit_mark),
        cursor(0, audit_mark),
        cursor(1),
        "WzEwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDBd",
    ):
        assert refused(service, "memory_audit", cursor=bad).code == "invalid_cursor"
    narrowed = refused(service, "memory_audit", scope=S, cursor=audit["next_cursor"])
    assert narrowed.code == "invalid_cursor"


@pytest.mark.parametrize(
    ("value", "queries"),
    [
        ("İstanbul deploy notes", ["İstanbul", "İSTANBUL", "istanbul"]),
        ("ΣΊΣΥΦΟΣ rollout checklist", ["ΣΊΣΥΦΟΣ", "σίσυφοσ"]),
        ("KELVİN scale and ǅemal", ["KELVİN", "kelvin", "ǄEMAL"]),
    ],
)
def test_letters_that_lower_to_two_characters_are_found(
    service: LessonService, value: str, queries: list[str]
) -> None:
    call(service, "memory_write", scope=S, key="k", value=value)
    call(service, "memory_write", scope=S, key="other", value="unrelated lesson text")
    for query in queries:
        hits = call(service, "memory_search", query=query, scopes=[S])["hits"]
        assert [h["lesson"]["key"] for h in hits] == ["k"], query


def test_a_query_of_stop_words_is_refused_alike_on_both_backends(service: LessonService) -> None:
    call(service, "memory_write", scope=S, key="k", value="Where is the config file")
    for query in ("the", "where is the", "The. IS"):
        error = refused(service, "memory_search", query=query, scopes=[S])
        assert error.code == "invalid_argument" and "stop words" in error.message
    # Positive controls: one word that is not a stop word is enough.
    for query in ("config", "where is the config"):
        hits = call(service, "memory_search", query=query, scopes=[S])["hits"]
        assert [h["lesson"]["key"] for h in hits] == ["k"], query
    # Recall treats such a task as no task rather than failing.
    assert call(service, "memory_recall", repo="acme/app", task="where is the")["recall_id"]


def test_cli_refuses_nul_and_hand_made_cursors_with_exit_2(cli: Cli) -> None:
    nul = cli("write", S, "k", "--json", input="a\x00b")
    assert nul.exit_code == 2 and nul.error()["code"] == "invalid_value"
    for args in (
        ("list", "global", "--cursor", "WyJ4Iix0cnVlXQ"),
        ("list", "global", "--cursor", cursor("x", 10**30)),
        ("audit", "--cursor", "WzEwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDBd"),
    ):
        result = cli(*args, "--json")
        assert result.exit_code == 2 and result.error()["code"] == "invalid_cursor", args
    assert cli("search", "the", "-s", S, "--json").exit_code == 2
    # Positive controls.
    assert cli.ok("write", S, "k", input="ab")["result"] == "created"
    assert cli.ok("list", S)["lessons"][0]["value"] == "ab"
    assert cli.ok("audit")["events"]


def test_mcp_refuses_booleans_nul_and_bad_cursors_as_tool_errors(home: Path) -> None:
    async def scenario(tools: Tools) -> None:
        write = {"scope": S, "key": "k", "value": "v"}
        assert (await tools.error("memory_write", **write, ttl_days=True))["code"] == (
            "invalid_ttl"
        )
        assert (await tools.error("memory_write", scope=S, key="k", value="a\x00"))["code"] == (
            "invalid_value"
        )
        assert (await tools.ok("memory_scopes"))["scopes"] == []
        created = await tools.ok("memory_write", **write, ttl_days=2)
        assert created["lesson"]["expires_at"] is not None
        await tools.ok("memory_write", scope=S, key="k2", value="İstanbul deploy notes")
        assert (await tools.error("memory_list", scope=S, limit=True))["code"] == (
            "invalid_argument"
        )
        page = await tools.ok("memory_list", scope=S, limit=1)
        assert len(page["lessons"]) == 1 and page["next_cursor"]
        for bad in ("WyJ4Iix0cnVlXQ", cursor("x", 10**30)):
            assert (await tools.error("memory_list", scope=S, cursor=bad))["code"] == (
                "invalid_cursor"
            )
        hits = await tools.ok("memory_search", query="İstanbul", scopes=[S])
        assert [h["lesson"]["key"] for h in hits["hits"]] == ["k2"]

    run_mcp(home, scenario)


def test_an_address_too_large_for_an_index_entry_is_refused_on_both(
    service: LessonService,
) -> None:
    """512 four-byte characters under a branch of 200 four-byte characters: PostgreSQL's btree
    cannot hold the entry, so both backends refuse it with invalid_key."""
    rng = random.Random(7)  # varied letters: PostgreSQL compresses a run of one letter
    letters = [chr(rng.randrange(0x20000, 0x2A6E0)) for _ in range(712)]
    wide_branch = "branch::acme/app::" + "".join(letters[:200])
    wide_key = "".join(letters[200:])
    error = refused(service, "memory_write", scope=wide_branch, key=wide_key, value="v")
    assert error.code == "invalid_key" and error.details["limit"] == 2400
    assert call(service, "memory_scopes")["scopes"] == []
    # Positive controls: the widest key under a short scope, a wide branch with a shorter key.
    for scope, key in ((S, wide_key), (wide_branch, wide_key[:300])):
        assert call(service, "memory_write", scope=scope, key=key, value="v")["result"] == (
            "created"
        )
        assert call(service, "memory_read", scope=scope, key=key)["lesson"]["key"] == key


def test_stdio_answers_a_call_holding_half_a_surrogate_pair(home: Path) -> None:
    """A host that cut a string inside an emoji sends a lone surrogate escape, valid JSON
    that the SDK's parser refuses: the line used to be dropped unanswered (the host waited
    for ever). Now the call is answered, refused with the field's code; the next call too."""
    import queue
    import subprocess
    import threading

    from tests.stdio import EXE

    def message(id_: int, method: str, params: dict[str, Any] | None = None) -> str:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            body["params"] = params
        return json.dumps(body)

    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    call = {"name": "memory_write", "arguments": {"scope": "global", "key": "KEY", "value": "v"}}
    lines = [
        message(1, "initialize", init),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        message(2, "tools/call", call).replace("KEY", "cut \\ud83d"),  # half an emoji
        message(3, "tools/call", call).replace("KEY", "whole \\ud83d\\ude00"),  # the control
    ]
    env = {"LORESTORE_HOME": str(home), "PATH": os.environ.get("PATH", "")}
    server = subprocess.Popen(
        [EXE, "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert server.stdin is not None and server.stdout is not None
    answers: dict[int, Any] = {}
    received: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [received.put(x) for x in server.stdout or ()])
    reader.start()
    try:
        server.stdin.write("\n".join(lines) + "\n")
        server.stdin.flush()
        while len(answers) < 3:  # the host keeps its end open until every call is answered
            try:
                answer = json.loads(received.get(timeout=30))
            except queue.Empty:
                pytest.fail(f"no answer after {sorted(answers)}: a call was dropped")
            answers[answer["id"]] = answer
    finally:
        server.stdin.close()
        server.wait(timeout=30)
        reader.join(timeout=30)
        server.stdout.close()
    refused = answers[2]["result"]
    assert refused["isError"] and refused["structuredContent"]["error"]["code"] == "invalid_key"
    landed = answers[3]["result"]
    assert not landed["isError"] and landed["structuredContent"]["result"] == "created"
    assert landed["structuredContent"]["lesson"]["key"] == "whole \U0001f600"
