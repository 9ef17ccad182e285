"""The embedded store's files are private to their owner: a new store folder is made 0700 and
a new database 0600 (SQLite gives its -wal and -shm files the database's mode), and a store
opened with group or world access is warned about, with the command that fixes it."""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path

LOG = logging.getLogger("lorestore.storage")
PRIVATE_FOLDER, PRIVATE_FILE = 0o700, 0o600


def create_private(path: Path) -> None:
    """Make the folders leading to ``path`` (those that do not exist, 0700) and the empty
    database file itself (0600) when it is new; an existing file is left as it is."""
    missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=PRIVATE_FOLDER, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))


def warn_if_shared(path: Path) -> list[str]:
    """Warn (and return the warnings) when the database or its folder can be read by others:
    lessons and the tokens' hashes are in it."""
    found = []
    for where, private, kind in (
        (path, PRIVATE_FILE, "file"),
        (path.parent, PRIVATE_FOLDER, "folder"),
    ):
        try:
            mode = stat.S_IMODE(where.stat().st_mode)
        except OSError:
            continue
        if mode & 0o077:
            found.append(
                f"the store's {kind} {where} is open to other users (mode {mode:o}): "
                f"`chmod {private:o} {where}` makes it yours alone"
            )
    for warning in found:
        LOG.warning(warning)
    return found
