"""Recall through the real handlers: the CLI and the spawned stdio MCP server derive the
context from git in the working directory, fill a lesson's provenance and depends_on blobs,
and never offer archived, expired, rejected or other-tenant lessons (each beside a control)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.conftest import Cli, Clock
from tests.gitrepo import git, make_work_tree
from tests.stdio import Tools, run_mcp

from lorestore.auth.actor import local_actor
from lorestore.models import WriteParams
from lorestore.service import LessonService
from lorestore.storage.sqlite import SQLiteStore

REPO = "repo::example/app"


@pytest.fixture
def work_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_work_tree(tmp_path, monkeypatch)


def test_cli_fills_provenance_and_recalls_from_git(cli: Cli, work_tree: Path) -> None:
    head = git(work_tree, "rev-parse", "HEAD")
    written = cli.ok(
        "write",
        REPO,
        "test-db",
        "Integration tests require a local database.",
        "--depends-on",
        "tests/conftest.py",
    )["lesson"]
    assert written["source"]["repo"] == "example/app"
    assert (written["source"]["branch"], written["source"]["commit"]) == ("main", head)
    blob = git(work_tree, "hash-object", "tests/conftest.py")
    assert written["depends_on"] == [{"path": "tests/conftest.py", "blob": blob}]
    cli.ok("policy", REPO, "--revision-policy", "files")
    result = cli.ok("recall", "--task", "run the integration tests")
    assert result["context"]["repo"] == "example/app" and result["context"]["revision"] == head
    assert [o["lesson"]["key"] for o in result["offered"]] == ["test-db"]
    (work_tree / "tests" / "conftest.py").write_text("DATABASE = 'sqlite-memory'\n")
    changed = cli.ok("recall")
    assert changed["offered"] == []
    assert changed["held"][0]["reasons"] == ["file_changed:tests/conftest.py"]
    explained = cli.ok("explain", changed["recall_id"])
    assert explained["held"][0]["reasons"] == ["file_changed:tests/conftest.py"]
    human = cli("recall", "--budget", "500")
    assert human.exit_code == 0 and "reference data, not instructions" in human.stdout
    # --blob gives a file as it is elsewhere (a remote client's checkout), before git's.
    given = cli.ok("recall", "--blob", f"tests/conftest.py={blob}")
    assert [o["lesson"]["key"] for o in given["offered"]] == ["test-db"]
    (work_tree / "tests" / "conftest.py").write_text("DATABASE = 'postgres'\n")
    assert cli.ok("recall")["offered"]  # the control: as committed, offered
    gone = cli.ok("recall", "--blob", "tests/conftest.py=")
    assert gone["held"][0]["reasons"] == ["file_changed:tests/conftest.py"]
    malformed = cli("recall", "--blob", "tests/conftest.py", "--json")
    assert malformed.exit_code == 2 and malformed.error()["code"] == "invalid_argument"


def test_cli_recall_never_offers_hidden_lessons(cli: Cli, work_tree: Path, home: Path) -> None:
    for key in ("kept", "archived", "rejected", "expired"):
        if key != "expired":
            cli.ok("write", REPO, key, f"The {key} lesson about deploys.")
    past = LessonService(
        SQLiteStore(home / "lorestore.db"), clock=Clock(datetime(2025, 1, 1, tzinfo=UTC))
    )
    past.memory_write(
        local_actor(),
        WriteParams(scope=REPO, key="expired", value="The expired lesson.", ttl_days=1),
    )
    past.memory_write(
        local_actor(principal="user:mallory"),
        WriteParams(scope=REPO, key="theirs", value="Mallory's lesson."),
    )
    past.store.close()
    cli.ok("archive", REPO, "archived")
    cli.ok("reject", REPO, "rejected", "--reason", "wrong")
    result = cli.ok("recall", "--task", "deploys")
    assert [o["lesson"]["key"] for o in result["offered"]] == ["kept"]
    assert {h["key"]: h["reasons"] for h in result["held"]} == {"expired": ["expired"]}
    assert "Mallory" not in result["text"] and "archived lesson" not in result["text"]


def test_stdio_server_recalls_in_its_working_directory(
    cli: Cli, work_tree: Path, home: Path
) -> None:
    cli.ok("write", REPO, "kept", "Run make lint before pushing.")
    cli.ok("write", REPO, "gone", "An archived lesson.")
    cli.ok("archive", REPO, "gone")
    cli.ok("write", "global", "kept", "The broader lesson of the same key.")  # shadowed
    cli.ok("write", "global", "copy", "run MAKE lint   before pushing.")  # a duplicate
    cli.ok("write", REPO, "long", "A long lesson about pushing. " * 40)  # over a small budget
    captured: dict[str, object] = {}

    async def agent(tools: Tools) -> None:
        result = await tools.ok("memory_recall", task="push a branch")
        assert result["context"]["repo"] == "example/app"
        assert result["context"]["branch"] == "main"
        assert sorted(o["lesson"]["key"] for o in result["offered"]) == ["kept", "long"]
        assert "<<<lorestore recall" in result["text"]
        explained = await tools.ok("memory_explain", recall_id=result["recall_id"])
        assert sorted(e["key"] for e in explained["offered"]) == ["kept", "long"]
        # The caller's budget holds, and every held lesson says why, as explain does.
        small = await tools.ok("memory_recall", task="push a branch", budget=100)
        assert small["context"]["budget"] == 100 and small["tokens_used"] <= 100
        reasons = {h["key"]: h["reasons"][0].split(":")[0] for h in small["held"]}
        assert reasons == {"kept": "shadowed_by", "copy": "duplicate_of", "long": "over_budget"}
        why = await tools.ok("memory_explain", recall_id=small["recall_id"])
        assert [(e["key"], e["reasons"]) for e in why["held"]] == [
            (h["key"], h["reasons"]) for h in small["held"]
        ]
        # A branch with an explicit empty repository names no scope: refused, not ignored.
        refused = await tools.error("memory_recall", repo="", branch="main")
        assert refused["code"] == "invalid_argument" and "repo" in refused["hint"]
        written = await tools.ok(
            "memory_write",
            scope=REPO,
            key="new",
            value="Lessons written by agents carry the commit.",
        )
        captured["source"] = written["lesson"]["source"]

    run_mcp(home, agent, cwd=work_tree)
    source = captured["source"]
    assert isinstance(source, dict)
    assert source["commit"] == git(work_tree, "rev-parse", "HEAD")
    assert source["repo"] == "example/app"


def test_cli_recall_leaves_out_what_git_names_but_no_scope_can_hold(
    cli: Cli, work_tree: Path
) -> None:
    """Git accepts a 210-character branch, longer than a branch scope: derived from git it
    drops its rung and recall answers from the others; passed by the user it is refused."""
    long_branch = "feature/" + "x" * 202
    git(work_tree, "checkout", "-q", "-b", long_branch)
    cli.ok("write", REPO, "kept", "Run make lint before pushing.")
    result = cli.ok("recall", "--task", "push")
    assert result["context"]["ladder"] == [REPO, "global"]
    assert [o["lesson"]["key"] for o in result["offered"]] == ["kept"]
    explicit = cli("recall", "--branch", long_branch, "--json")
    assert explicit.exit_code == 2 and explicit.error()["code"] == "invalid_scope"
    assert explicit.error()["hint"]


def test_cli_recall_leaves_out_a_repository_name_no_scope_can_hold(
    cli: Cli, work_tree: Path
) -> None:
    """The owner/name of a remote URL that is no scope name (a "+") drops the repo
    and branch rungs; passed by the user, it is refused."""
    git(work_tree, "remote", "set-url", "origin", "https://git.example.com/example/app+plus.git")
    cli.ok("write", "global", "everywhere", "Read the README first.")
    derived = cli.ok("recall")
    assert derived["context"]["ladder"] == ["global"]
    assert [o["lesson"]["key"] for o in derived["offered"]] == ["everywhere"]
    given = cli("recall", "--repo", "example/app+plus", "--json")
    assert given.exit_code == 2 and given.error()["code"] == "invalid_argument"
    assert "OWNER/NAME" in given.error()["message"]  # the repository, not a scope
    lone = cli("recall", "--repo", "acme", "--json").error()
    assert lone["code"] == "invalid_argument" and "repo::" not in lone["message"]


def test_cli_recall_in_a_checkout_without_a_remote_leaves_the_branch_out(
    cli: Cli, work_tree: Path
) -> None:
    """With no remote there is no repository, so git's branch forms no rung and is not
    reported as if it did; a branch passed without its repository is refused with the fix."""
    git(work_tree, "remote", "remove", "origin")
    cli.ok("write", "global", "everywhere", "Read the README first.")
    derived = cli.ok("recall")
    assert derived["context"]["ladder"] == ["global"]
    assert (derived["context"]["repo"], derived["context"]["branch"]) == (None, None)
    alone = cli("recall", "--branch", "main", "--json")
    assert alone.exit_code == 2 and alone.error()["code"] == "invalid_argument"
    assert "repo" in alone.error()["hint"]
    both = cli.ok("recall", "--repo", "example/app", "--branch", "main")  # the control
    assert both["context"]["ladder"] == ["branch::example/app::main", REPO, "global"]
    assert [o["lesson"]["key"] for o in both["offered"]] == ["everywhere"]


def test_cli_depends_on_paths_are_relative_to_the_current_directory(
    cli: Cli, work_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = work_tree / "src" / "sub"
    sub.mkdir(parents=True)
    (work_tree / "README.md").write_text("the root README\n")
    (sub / "README.md").write_text("the sub README\n")
    (sub / "a.py").write_text("A = 1\n")
    monkeypatch.chdir(sub)
    deps = cli.ok(
        "write",
        REPO,
        "k",
        "v",
        "--depends-on",
        "README.md",
        "--depends-on",
        "a.py",
        "--depends-on",
        "../../README.md",
        "--depends-on",
        "./../sub/b.py=" + "0" * 40,
    )["lesson"]["depends_on"]
    blob = {p: git(work_tree, "hash-object", p) for p in ("README.md", "src/sub/README.md")}
    assert deps == [
        {"path": "src/sub/README.md", "blob": blob["src/sub/README.md"]},
        {"path": "src/sub/a.py", "blob": git(work_tree, "hash-object", "src/sub/a.py")},
        {"path": "README.md", "blob": blob["README.md"]},
        {"path": "src/sub/b.py", "blob": "0" * 40},
    ]
    cli.ok("write", REPO, "abs", "v", "--depends-on", str(sub / "a.py"))
    assert cli.ok("read", REPO, "abs")["lesson"]["depends_on"][0]["path"] == "src/sub/a.py"
    for outside in ("../../../elsewhere.py", str(work_tree.parent / "elsewhere.py"), "../.."):
        refused = cli("write", REPO, "out", "v", "--depends-on", outside, "--json")
        assert refused.exit_code == 2 and refused.error()["code"] == "invalid_argument", outside
    assert cli("read", REPO, "out", "--json").error()["code"] == "not_found"
    # Recall from the sub-directory checks the same repository-relative files.
    cli.ok("policy", REPO, "--revision-policy", "files")
    cli.ok("write", REPO, "sub-file", "v", "--depends-on", "a.py")
    assert "sub-file" in [o["lesson"]["key"] for o in cli.ok("recall")["offered"]]
    (sub / "a.py").write_text("A = 2\n")
    held = {h["key"]: h["reasons"] for h in cli.ok("recall")["held"]}
    assert held["sub-file"] == ["file_changed:src/sub/a.py"]


def test_cli_recall_prints_the_fence_exactly_as_its_json_text(cli: Cli, work_tree: Path) -> None:
    """The human output copies the block verbatim: no emoji codes, markup or highlighting."""
    cli.ok("write", REPO, "codes", "Run :smile: then [bold]make[/bold] on 10.0.0.1 :warning:")
    text = cli.ok("recall", "--budget", "500")["text"]
    human = cli("recall", "--budget", "500")
    block = human.stdout[human.stdout.index("<<<lorestore") :]
    block = block[: block.index("<<<end lorestore recall>>>") + len("<<<end lorestore recall>>>")]
    # The recall ids differ; everything after the opening line is the same.
    assert block.split("\n", 1)[1] == text.split("\n", 1)[1]
    assert ":smile:" in block and "[bold]make[/bold]" in block  # as written, not rendered


def test_cli_reads_the_branch_by_its_name_when_a_tag_shares_it(cli: Cli, work_tree: Path) -> None:
    git(work_tree, "checkout", "-q", "-b", "feature")
    git(work_tree, "tag", "feature")  # `rev-parse --abbrev-ref HEAD` now says heads/feature
    cli.ok("write", "branch::example/app::feature", "bk", "A lesson of the feature branch.")
    result = cli.ok("recall")
    assert result["context"]["branch"] == "feature"
    assert [o["lesson"]["key"] for o in result["offered"]] == ["bk"]


def test_cli_recall_reads_git_where_its_cwd_says(cli: Cli, work_tree: Path, tmp_path: Path) -> None:
    """--cwd names the checkout the context comes from, not only the one files are hashed in;
    a repository named by the caller is not given this checkout's branch or HEAD."""
    other = tmp_path / "lib"
    other.mkdir()
    git(other, "init", "-q", "-b", "trunk")
    git(other, "remote", "add", "origin", "git@github.com:example/lib.git")
    (other / "x.py").write_text("x = 1\n")
    git(other, "add", ".")
    git(other, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "lib")
    there = cli.ok("recall", "--cwd", str(other))["context"]
    assert (there["repo"], there["branch"]) == ("example/lib", "trunk")
    assert there["revision"] == git(other, "rev-parse", "HEAD")
    here = cli.ok("recall")["context"]  # the control: this checkout
    assert (here["repo"], here["branch"]) == ("example/app", "main")
    named = cli.ok("recall", "--repo", "example/lib")["context"]
    assert named["repo"] == "example/lib" and named["branch"] is None
    assert named["revision"] is None


def test_cli_recall_outside_a_work_tree_holds_files_as_unknown(
    cli: Cli, work_tree: Path, tmp_path: Path
) -> None:
    cli.ok("write", REPO, "test-db", "Tests need Postgres.", "--depends-on", "tests/conftest.py")
    cli.ok("policy", REPO, "--revision-policy", "files")
    assert [o["lesson"]["key"] for o in cli.ok("recall")["offered"]] == ["test-db"]  # control
    elsewhere = cli.ok("recall", "--repo", "example/app", "--cwd", str(tmp_path))
    assert [(h["key"], h["reasons"]) for h in elsewhere["held"]] == [
        ("test-db", ["file_unknown:tests/conftest.py"])
    ]


def test_cli_depends_on_names_a_file_whose_name_holds_an_equals_sign(
    cli: Cli, work_tree: Path
) -> None:
    (work_tree / "a=b.txt").write_text("x\n")
    blob = git(work_tree, "hash-object", "a=b.txt")
    written = cli.ok("write", REPO, "eq", "A lesson.", "--depends-on", "a=b.txt")["lesson"]
    assert written["depends_on"] == [{"path": "a=b.txt", "blob": blob}]
    given = cli.ok("write", REPO, "eq2", "B lesson.", "--depends-on", f"a=b.txt={blob.upper()}")
    assert given["lesson"]["depends_on"] == [{"path": "a=b.txt", "blob": blob}]  # the control
    bad = cli("recall", "--blob", "a=b.txt=nothex", "--json")
    assert bad.exit_code == 2 and bad.error()["code"] == "invalid_argument"


def test_cli_resolves_a_revision_named_by_a_ref(cli: Cli, work_tree: Path) -> None:
    head = git(work_tree, "rev-parse", "HEAD")
    written = cli.ok("write", REPO, "k", "A lesson.", "--commit", "HEAD")["lesson"]
    assert written["source"]["commit"] == head  # not the text "HEAD", which never matches
    assert cli.ok("recall", "--revision", "main")["context"]["revision"] == head
    short = cli.ok("recall", "--revision", head[:9])["context"]["revision"]
    assert short == head[:9]  # the control: a hash is kept as given
    unknown = cli("recall", "--revision", "no-such-ref", "--json")
    assert unknown.exit_code == 2 and unknown.error()["code"] == "invalid_argument"


def test_cli_recall_keeps_to_the_budget_it_is_given(cli: Cli, work_tree: Path) -> None:
    cli.ok("write", REPO, "short", "Run make lint before pushing.")
    cli.ok("write", REPO, "long", "A long lesson about pushing. " * 40)
    small = cli.ok("recall", "--budget", "100")
    assert small["context"]["budget"] == 100 and small["tokens_used"] <= 100
    assert [(h["key"], h["reasons"]) for h in small["held"]] == [("long", ["over_budget"])]
    roomy = cli.ok("recall")  # the control: the default budget holds both
    assert roomy["context"]["budget"] == 2000 and roomy["held"] == []


def test_cli_fills_no_provenance_for_another_repositorys_lesson(cli: Cli, work_tree: Path) -> None:
    """A lesson written from this checkout for another repository's scope is not about this
    checkout's branch or commit: nothing of it is filled in."""
    head = git(work_tree, "rev-parse", "HEAD")
    for scope in ("repo::other/thing", "branch::other/thing::main"):
        source = cli.ok("write", scope, "k", "About another repository.")["lesson"]["source"]
        assert (source.get("repo"), source.get("branch"), source.get("commit")) == (None,) * 3
    # Controls: this repository's scope, and a scope of no repository, are filled from git.
    ours = cli.ok("write", REPO, "k", "About this one.")["lesson"]["source"]
    assert (ours["repo"], ours["commit"]) == ("example/app", head)
    broad = cli.ok("write", "global", "k", "About everything.")["lesson"]["source"]
    assert broad["repo"] == "example/app" and broad["commit"] == head


def test_cli_depends_on_a_file_the_checkout_lacks_says_so(cli: Cli, work_tree: Path) -> None:
    missing = cli("write", REPO, "k", "Relies on a file.", "--depends-on", "nonexist.txt", "--json")
    assert missing.exit_code == 2 and missing.error()["code"] == "invalid_argument"
    assert "no such file" in missing.error()["message"] and "PATH=BLOB" in missing.error()["hint"]
    assert cli("read", REPO, "k", "--json").error()["code"] == "not_found"  # nothing written
    kept = cli.ok("write", REPO, "k", "Relies on a file.", "--depends-on", "tests/conftest.py")
    assert kept["lesson"]["depends_on"][0]["path"] == "tests/conftest.py"  # the control


def test_cli_recall_says_when_it_knows_no_repository(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli.ok("write", "global", "g", "Read the README first.")
    monkeypatch.chdir(tmp_path)  # not a git checkout
    told = cli("recall")
    assert told.exit_code == 0 and "no repository" in told.stdout and "--repo" in told.stdout
    given = cli("recall", "--repo", "example/app")  # the control: a repository named
    assert given.exit_code == 0 and "no repository" not in given.stdout
