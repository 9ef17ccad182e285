"""`lorestore export` / `import` through the real CLI (Typer's runner) and the two streaming
REST routes through the real Starlette application: the same records and results on both
surfaces, NDJSON both ways past the request-body limit, a dry run that writes nothing, a bad
line named with its number, and the permission and scope checks, each beside its control."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import Cli
from tests.portable import header, lesson, line
from tests.serving import Api, error_of, make_api

S = "repo::acme/app"


@pytest.fixture
def api(home: Path) -> Iterator[Api]:
    yield from make_api(home, max_request_bytes=64 * 1024)


def _records(data: bytes) -> list[bytes]:
    """The records of an export (without the header line, whose time differs)."""
    lines = data.splitlines()
    assert json.loads(lines[0])["format"] == "lorestore-jsonl"
    return lines[1:]


def _seed(cli: Cli) -> None:
    cli.ok("write", S, "pg", "Integration tests need Postgres", "--tag", "db", "--commit", "abc")
    cli.ok("write", S, "pg", "Integration tests need Postgres 16")
    cli.ok("verify", S, "pg")
    cli.ok("write", "global", "mocks", "Mock the database")
    cli.ok("reject", "global", "mocks", "--reason", "use the real one")
    cli.ok("write", "project::billing", "old", "An old lesson")
    cli.ok("archive", "project::billing", "old")


def test_cli_round_trip_between_two_stores(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(cli)
    summary = cli.ok("export", str(tmp_path / "a.jsonl"))
    assert (summary["lessons"], summary["tombstones"]) == (3, 1)
    monkeypatch.setenv("LORESTORE_HOME", str(tmp_path / "elsewhere"))
    dry = cli.ok("import", str(tmp_path / "a.jsonl"), "--dry-run")
    assert dry["dry_run"] and dry["lessons"]["added"] == 3 and dry["tombstones"]["added"] == 1
    assert cli.ok("scopes")["scopes"] == []  # the dry run wrote nothing
    done = cli.ok("import", str(tmp_path / "a.jsonl"))
    assert done["lessons"]["added"] == 3 and done["problems"] == []
    assert cli.ok("history", S, "pg")["versions"][0]["value"] == "Integration tests need Postgres"
    cli.ok("export", str(tmp_path / "b.jsonl"))
    first, second = ((tmp_path / n).read_bytes() for n in ("a.jsonl", "b.jsonl"))
    assert _records(second) == _records(first)
    refused = cli("write", S, "again", "mock THE database", "--json")
    assert refused.exit_code == 1 and refused.error()["code"] == "rejected_value"


def test_cli_names_a_bad_line_exits_1_and_imports_the_rest(cli: Cli) -> None:
    data = b"\n".join(
        [header(), line(lesson("one", "first")), b"{oops", line(lesson("two", "second"))]
    )
    human = cli("import", input=data.decode() + "\n")  # from stdin
    assert human.exit_code == 1
    assert "invalid_record line 3" in " ".join(human.stderr.split())
    assert [cli.ok("read", S, k)["lesson"]["value"] for k in ("one", "two")] == ["first", "second"]
    clean = cli("import", input=data.decode().replace("{oops\n", "") + "\n")
    assert clean.exit_code == 0  # the control: nothing left out, status 0


def test_cli_export_to_stdout_with_filters(cli: Cli) -> None:
    _seed(cli)
    result = cli("export", "--scope", "repo::acme/*", "--state", "active", "--json")
    assert result.exit_code == 0
    records = [json.loads(x) for x in _records(result.stdout.encode())]
    assert [r["key"] for r in records if r["type"] == "lesson"] == ["pg"]
    assert json.loads(result.stderr)["lessons"] == 1  # the summary, beside the data
    bad = cli("export", "--state", "gone", "--json")
    assert bad.exit_code == 2 and bad.error()["code"] == "invalid_argument"


def test_rest_export_streams_what_the_cli_writes(api: Api, cli: Cli, tmp_path: Path) -> None:
    _seed(cli)
    cli.ok("export", str(tmp_path / "cli.jsonl"))
    got = api.get("memory_export")
    assert got.status_code == 200 and got.headers["content-type"] == "application/x-ndjson"
    assert _records(got.content) == _records((tmp_path / "cli.jsonl").read_bytes())
    posted = api.post("memory_export", {"scopes": ["global"], "history": False})
    records = [json.loads(x) for x in _records(posted.content)]
    assert {r["type"] for r in records} == {"tombstone", "lesson"}
    assert all("versions" not in r for r in records)
    lorekit = api.get("memory_export", format="lorekit")
    assert error_of(lorekit, 400)["code"] == "invalid_argument"
    # A POST without a body filters by its query, as a GET does; both at once is refused
    # rather than one silently dropped (a dropped filter exports more than was asked).
    queried = api.post("memory_export", params={"scopes": "global", "history": "false"})
    assert _records(queried.content) == _records(posted.content)
    both = api.post("memory_export", {"history": False}, params={"scopes": "global"})
    assert error_of(both, 400)["code"] == "invalid_argument"


def test_rest_import_streams_past_the_body_limit(api: Api) -> None:
    big = [header()] + [line(lesson(f"k{i}", f"lesson {i} " + "x" * 900)) for i in range(300)]
    body = b"".join(x + b"\n" for x in big)
    assert len(body) > 4 * 64 * 1024

    def chunks() -> Iterator[bytes]:
        for at in range(0, len(body), 10_000):
            yield body[at : at + 10_000]

    response = api.client.post(
        "/api/v1/memory_import",
        content=chunks(),
        headers={"Authorization": f"Bearer {api.token}", "Content-Type": "application/x-ndjson"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["lessons"]["added"] == 300
    too_big = api.post("memory_write", {"scope": S, "key": "k", "value": "x" * 70_000 * 2})
    assert error_of(too_big, 413)["code"] == "value_too_large"  # the limit still holds elsewhere


def test_rest_import_result_equals_the_cli_json(
    api: Api, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = b"".join(
        x + b"\n"
        for x in [header(), line(lesson("a", "one")), b"nope", line({"type": "note", "n": 1})]
    )
    (tmp_path / "f.jsonl").write_bytes(data)
    rest = api.client.post(
        "/api/v1/memory_import", content=data, headers={"Authorization": f"Bearer {api.token}"}
    )
    monkeypatch.setenv("LORESTORE_HOME", str(tmp_path / "other"))
    local = cli("import", str(tmp_path / "f.jsonl"), "--json")
    assert local.exit_code == 1 and rest.status_code == 200
    assert rest.json() == local.json()
    assert [(p["line"], p["code"]) for p in rest.json()["problems"]] == [
        (3, "invalid_record"),
        (4, "unknown_type"),
    ]


def test_rest_import_needs_write_and_keeps_trust_for_reviewers(api: Api) -> None:
    writer, reader = api.mint(permission="write"), api.mint(permission="read")
    body = b"".join(
        x + b"\n"
        for x in [header(), line(lesson("v", "verified", trust="verified")), line(lesson("c", "c"))]
    )

    def post(token: str) -> object:
        return api.client.post(
            "/api/v1/memory_import", content=body, headers={"Authorization": f"Bearer {token}"}
        )

    assert error_of(post(reader), 403)["code"] == "forbidden"
    written = post(writer).json()  # type: ignore[attr-defined]
    assert written["lessons"]["added"] == 1
    assert [p["code"] for p in written["problems"]] == ["forbidden"]
    assert api.ok("memory_read", {"scope": S, "key": "c"})["lesson"]["trust"] == "candidate"
    reviewed = post(api.token).json()  # type: ignore[attr-defined]
    assert reviewed["lessons"] == {"added": 1, "unchanged": 1, "differs": 0, "refused": 0}


def test_rest_export_holds_only_what_the_token_covers(api: Api, cli: Cli) -> None:
    _seed(cli)
    confined = api.mint(permission="read", scopes=["repo::acme/*"])
    mine = [json.loads(x) for x in _records(api.get("memory_export", token=confined).content)]
    assert {r.get("scope") for r in mine} == {S}
    everything = [json.loads(x) for x in _records(api.get("memory_export").content)]
    assert {r.get("scope") for r in everything} == {S, "global", "project::billing"}


def test_rest_export_of_a_scope_beyond_the_token_is_forbidden(api: Api, cli: Cli) -> None:
    _seed(cli)
    confined = api.mint(permission="read", scopes=["repo::acme/*"])
    for scopes in (["global"], ["repo::*/*"], [S, "global"]):
        refused = api.get("memory_export", token=confined, scopes=scopes)
        assert refused.status_code == 403, scopes
        assert refused.json()["error"]["code"] == "forbidden"
    inside = api.get("memory_export", token=confined, scopes=[S])  # the control
    assert inside.status_code == 200
    assert {json.loads(x).get("scope") for x in _records(inside.content)} == {S}


def test_an_export_piped_into_a_reader_that_stops_ends_quietly(cli: Cli, home: Path) -> None:
    """`lorestore export | head`: the closed pipe ends the export as SIGPIPE would (status
    141), with nothing on stderr; it is not bad input."""
    import subprocess

    from tests.serving import EXE, base_env

    lines = [header(), *(line(lesson(f"k{i}", f"Lesson {i}: " + "x" * 500)) for i in range(400))]
    assert cli.ok("import", input=b"\n".join(lines).decode())["lessons"]["added"] == 400
    with subprocess.Popen(
        [EXE, "export"], env=base_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as export:
        assert export.stdout is not None and export.stderr is not None
        assert export.stdout.read(100).startswith(b'{"format"')
        export.stdout.close()  # the reader stops, as head does
        assert export.wait(timeout=60) == 141
        assert export.stderr.read() == b""
    # The control: read to the end, the export is whole and succeeds.
    whole = subprocess.run([EXE, "export"], env=base_env(home), capture_output=True, check=False)
    assert whole.returncode == 0 and len(whole.stdout.splitlines()) == 401


def test_a_repeated_problem_is_shown_twenty_times_then_counted(cli: Cli) -> None:
    assert cli("db", "cap", "user:local", "5", "--json").exit_code == 0
    lines = [header(), *(line(lesson(f"k{i}", f"Lesson {i}")) for i in range(40))]
    done = cli("import", input=b"\n".join(lines).decode())
    assert done.exit_code == 1
    shown = [x for x in done.stderr.splitlines() if x.startswith("cap_exceeded line")]
    assert len(shown) == 20
    assert "cap_exceeded: 15 more not shown (35 in all" in done.stderr
    assert "lorestore db cap" in done.stderr  # the fix, once
    # The control: --json still lists every problem.
    again = cli("import", "--json", input=b"\n".join(lines).decode())
    assert len(again.json()["problems"]) == 35
