"""The `lorestore` command on PATH: `make run` installs it into .venv/bin only, so the README's
commands failed with `command not found`. `make install` links it into a folder on PATH, and
`make run` and the README say so."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


@pytest.mark.slow
def test_make_install_links_the_command_into_bindir(tmp_path: Path) -> None:
    if not (ROOT / ".venv" / "bin" / "lorestore").exists() or VENV_BIN != ROOT / ".venv" / "bin":
        pytest.skip("runs where the suite runs from this checkout's .venv (make test)")
    bindir = tmp_path / "bin"
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        ["make", "--no-print-directory", "install", f"BINDIR={bindir}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"{bindir} is not on your PATH" in done.stdout  # it says how to fix that
    linked = subprocess.run(
        ["lorestore", "--version"],
        env={**env, "PATH": f"{bindir}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert linked.returncode == 0 and linked.stdout.startswith("lorestore "), linked.stderr
    again = subprocess.run(
        ["make", "--no-print-directory", "install", f"BINDIR={bindir}"],
        cwd=ROOT,
        env={**env, "PATH": f"{bindir}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert again.returncode == 0 and "not on your PATH" not in again.stdout  # twice = once


def test_the_readme_and_make_run_say_how_to_get_the_command() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make install" in readme and "pipx install ." in readme
    dry = subprocess.run(
        ["make", "-n", "run"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert "make install" in dry.stdout
