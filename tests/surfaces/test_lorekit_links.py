"""Symbolic links in a LoreKit tree never take an import or an export out of it (security issue
19, item 15), through the real CLI with real links: a repository's `.lorekit/global ->
/elsewhere` made an export write outside the tree and an import read a file from outside the
repository. Links that leave the root are refused on both sides, named, and the command exits
1; links that stay inside the tree (the controls) work as before."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.conftest import Cli


def _lesson_file(scope: str, key: str, text: str) -> str:
    lines = [f"scope: {json.dumps(scope)}", f"key: {json.dumps(key)}"]
    lines.append('created: "2026-01-02T03:04:05.123Z"')
    return "---\n" + "\n".join(lines) + "\n---\n" + text + "\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside every tree, holding a lesson file."""
    path = tmp_path / "elsewhere"
    path.mkdir()
    (path / "secret.md").write_text(_lesson_file("global", "secret", "Outside the tree."))
    return path


def test_an_import_reads_no_file_through_a_link_leaving_the_tree(
    cli: Cli, tmp_path: Path, outside: Path
) -> None:
    kit = tmp_path / "kit"
    (kit / "repo" / "acme" / "app").mkdir(parents=True)
    os.symlink(outside, kit / "global")  # a top directory that is a link out
    os.symlink(outside / "secret.md", kit / "repo" / "acme" / "app" / "leak.md")  # a file link
    (kit / "repo" / "acme" / "app" / "own.md").write_text(
        _lesson_file("repo::acme/app", "own", "Inside the tree.")
    )
    (kit / "notes").mkdir()
    (kit / "notes" / "shared.md").write_text(
        _lesson_file("repo::acme/app", "shared", "Linked within the tree.")
    )
    os.symlink(kit / "notes" / "shared.md", kit / "repo" / "acme" / "app" / "shared.md")
    result = cli("import", "--format", "lorekit", str(kit), "--json")
    assert result.exit_code == 1
    body = result.json()
    refused = sorted((Path(p["path"]).name, p["message"]) for p in body["problems"])
    assert [name for name, _ in refused] == ["global", "leak.md"]
    assert all("leaves the tree" in message for _, message in refused)
    assert cli("read", "global", "secret", "--json").exit_code == 1  # nothing from outside
    # The controls: the tree's own file and a link that stays inside it are read.
    assert body["lessons"]["added"] == 2
    assert (
        cli.ok("read", "repo::acme/app", "shared")["lesson"]["value"] == "Linked within the tree."
    )
    # The tree named through a link of its own (~/.lorekit -> a dotfiles checkout) is read.
    os.symlink(kit, tmp_path / "alias")
    again = cli("import", "--format", "lorekit", str(tmp_path / "alias"), "--json")
    assert again.json()["lessons"]["unchanged"] == 2


def test_a_repositorys_lorekit_that_is_a_link_out_is_not_read(
    cli: Cli, tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (outside / "global").mkdir()
    (outside / "global" / "x.md").write_text(_lesson_file("global", "x", "Outside the repo."))
    os.symlink(outside, repo / ".lorekit")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    result = cli("import", "--format", "lorekit", "--json")
    assert result.exit_code == 1
    (problem,) = result.json()["problems"]
    assert "leaves the repository" in problem["message"]
    assert cli("read", "global", "x", "--json").exit_code == 1
    # The control: a repository's own .lorekit directory is read.
    (repo / ".lorekit").unlink()
    (repo / ".lorekit" / "global").mkdir(parents=True)
    (repo / ".lorekit" / "global" / "x.md").write_text(_lesson_file("global", "x", "In the repo."))
    assert cli.ok("import", "--format", "lorekit")["lessons"]["added"] == 1


def test_an_export_writes_nothing_through_a_link_leaving_the_tree(
    cli: Cli, tmp_path: Path, outside: Path
) -> None:
    cli.ok("write", "global", "first", "A global lesson.")
    cli.ok("write", "repo::acme/app", "second", "A repository lesson.")
    kit = tmp_path / "kit"
    kit.mkdir()
    os.symlink(outside, kit / "global")
    before = sorted(p.name for p in outside.iterdir())
    result = cli("export", "--format", "lorekit", str(kit), "--json")
    assert result.exit_code == 1
    body = result.json()
    assert sorted(p.name for p in outside.iterdir()) == before  # nothing written out there
    assert body["withheld"] == {"outside_tree": 1}
    (note,) = [n for n in body["notes"] if n["code"] == "outside_tree"]
    assert note["key"] == "first" and "leaves the tree" in note["message"]
    # The control: the lesson whose directory is inside the tree is written.
    assert (kit / "repo" / "acme" / "app" / "second.md").is_file()
    # A file at a lesson's path that links out is not written through (nor read) either.
    (kit / "global").unlink()
    (kit / "global").mkdir()
    os.symlink(outside / "secret.md", kit / "global" / "first.md")
    secret = (outside / "secret.md").read_bytes()
    cli("export", "--format", "lorekit", str(kit), "--json")
    assert (outside / "secret.md").read_bytes() == secret
    assert (kit / "global" / "first-2.md").is_file()
    # The control: with no link in the way, the export writes the whole tree and exits 0.
    (kit / "global" / "first.md").unlink()
    done = cli.ok("export", "--format", "lorekit", str(tmp_path / "clean"))
    assert done["files"]["written"] == 2 and done["withheld"] == {}
