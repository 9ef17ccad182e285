"""The embedded store's files are the person's alone: a new home folder 0700, the database
(and SQLite's -wal/-shm beside it) and the login credential 0600; a store or credential open
to others is warned about on open, with the chmod that fixes it. Through the real command."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest
from tests.serving import EXE, base_env


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args], env=base_env(home), capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.slow
def test_a_new_store_is_private_and_a_shared_one_is_warned_about(tmp_path: Path) -> None:
    home = tmp_path / "a" / "home"  # two folders that do not exist yet
    first = _run(home, "write", "global", "k", "a lesson")
    assert first.returncode == 0, first.stderr
    assert _mode(home) == 0o700 and _mode(tmp_path / "a") == 0o700
    for name in ("lorestore.db", "lorestore.db-wal", "lorestore.db-shm"):
        if (home / name).exists():
            assert _mode(home / name) == 0o600, name
    assert "open to other users" not in first.stderr  # the control: nothing to warn about
    (home / "lorestore.db").chmod(0o644)
    home.chmod(0o755)
    warned = _run(home, "read", "global", "k")
    assert warned.returncode == 0  # a warning, not a refusal: the lesson is still read
    assert f"`chmod 600 {home / 'lorestore.db'}`" in warned.stderr
    assert f"`chmod 700 {home}`" in warned.stderr
    (home / "lorestore.db").chmod(0o600)
    home.chmod(0o700)
    assert "open to other users" not in _run(home, "read", "global", "k").stderr


def test_a_credential_others_can_read_is_warned_about(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    path = home / "credentials.json"
    path.write_text('{"url": "http://127.0.0.1:9", "token": "lst_x"}')
    path.chmod(0o644)
    shared = _run(home, "logout")  # reads the credential, then removes it
    assert f"`chmod 600 {path}`" in shared.stderr
    path.write_text('{"url": "http://127.0.0.1:9", "token": "lst_x"}')
    path.chmod(0o600)
    assert "can be read by other users" not in _run(home, "logout").stderr
