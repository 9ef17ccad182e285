"""``lorestore install`` and ``uninstall``: the changes to each file, shown as a diff
(``--dry-run``) or written, and the install manifest that lets uninstall give every file back
exactly as it was.

The manifest (``installs.json`` in the store's home, readable by its owner only, as it holds
copies of host configuration) records, per file install wrote: the file's content before the
first install (None: install created it), a digest of what install last wrote, and the
folders it created. Uninstall restores that content byte for byte when the file is still
what install wrote; a file changed since (by the host or a person) has lorestore's entries
taken out structurally instead (edits.py), keeping everything else."""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from lorestore.hosts.edits import Edit
from lorestore.hosts.formats import Target

MANIFEST = "installs.json"
Action = Literal["create", "edit", "remove", "unchanged"]


@dataclass(frozen=True)
class Change:
    edit: Edit
    before: str | None
    after: str | None

    @property
    def path(self) -> Path:
        return self.edit.path

    @property
    def action(self) -> Action:
        if self.before == self.after:
            return "unchanged"
        if self.before is None:
            return "create"
        return "remove" if self.after is None else "edit"

    def diff(self, root: Path) -> str:
        name = _shown(self.path, root)
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True),
            (self.after or "").splitlines(keepends=True),
            fromfile="/dev/null" if self.before is None else f"a/{name}",
            tofile="/dev/null" if self.after is None else f"b/{name}",
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _read(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _digest(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


class Manifest:
    """What install wrote, per file (absolute path), kept in the store's home."""

    def __init__(self, home: Path) -> None:
        self.path = home / MANIFEST
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        files = data.get("files") if isinstance(data, dict) else None
        self.files: dict[str, dict[str, Any]] = files if isinstance(files, dict) else {}

    def get(self, path: Path) -> dict[str, Any] | None:
        entry = self.files.get(str(path))
        return entry if isinstance(entry, dict) else None

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"version": 1, "files": self.files}, f, indent=2)
        os.replace(tmp, self.path)


def plan_install(edits: list[Edit]) -> list[Change]:
    """What install would make of each file (nothing is written)."""
    changes = []
    for edit in edits:
        before = _read(edit.path)
        changes.append(Change(edit, before, edit.apply(before)))
    return changes


def plan_uninstall(edits: list[Edit], manifest: Manifest) -> list[Change]:
    """What uninstall would make of each file: its content before install when it is still
    what install wrote, else the file without lorestore's entries; a file that holds none of
    them is left alone."""
    changes = []
    for edit in edits:
        current = _read(edit.path)
        entry = manifest.get(edit.path)
        if current is None:
            after = None
        elif entry is not None and entry.get("written") == _digest(current):
            after = entry.get("original")
        elif edit.holds(current):
            after = edit.remove(current)
        else:
            after = current
        changes.append(Change(edit, current, after))
    return changes


def _missing_dirs(path: Path) -> list[Path]:
    """The folders above ``path`` that do not exist yet, outermost first."""
    missing = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    return list(reversed(missing))


def apply_install(changes: list[Change], manifest: Manifest, host: str) -> None:
    for change in changes:
        path, before, after = change.path, change.before, change.after
        assert after is not None
        entry = manifest.get(path)
        if entry is not None and entry.get("written") == _digest(before):
            original, dirs = entry.get("original"), list(entry.get("dirs", []))
        elif before is not None and change.edit.holds(before):
            # lorestore's entries were there before this install (written by hand or an
            # install whose manifest is gone): what uninstall restores is the file without them.
            original, dirs = (
                change.edit.remove(before),
                list(entry.get("dirs", []) if entry else []),
            )
        else:
            original, dirs = before, []
        if change.action != "unchanged":
            created = _missing_dirs(path)
            for folder in created:
                folder.mkdir(mode=0o755)
            dirs += [str(d) for d in created]
            _write(path, after)
        manifest.files[str(path)] = {
            "host": host,
            "original": original,
            "written": _digest(after),
            "dirs": dirs,
        }
    manifest.save()


def apply_uninstall(changes: list[Change], manifest: Manifest) -> None:
    created: set[Path] = set()
    for change in changes:
        path = change.path
        created.update(Path(d) for d in (manifest.get(path) or {}).get("dirs", []))
        if change.action == "remove":
            path.unlink()
        elif change.action in ("edit", "create"):
            assert change.after is not None
            _write(path, change.after)
        manifest.files.pop(str(path), None)
    # The folders install made, deepest first, once every file is out of them.
    for folder in sorted(created, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):  # not empty: something else lives there now
            folder.rmdir()
    manifest.save()


def _write(path: Path, text: str) -> None:
    """Write ``text`` through a temporary file beside ``path``, keeping an existing file's
    permissions (a host's configuration may be private)."""
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    tmp = path.with_name(f".{path.name}.lorestore-tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def resolve_target(
    host: str,
    *,
    user: bool,
    remote: str | None,
    token_env: str,
    hooks: bool | None,
    cwd: str,
) -> Target:
    """The install ``lorestore install`` was asked for, from its options and the settings
    of this process: the repository of ``cwd`` (or the home folder with ``user``), lorestore
    by absolute path, and the store settings that chose the store (embedded) or the
    server's URL and the token variable's name (remote). A token is never part of it."""
    import shutil
    import sys

    from lorestore.config import codex_home, load_settings, sqlite_path, store_variables
    from lorestore.core.errors import LorestoreError
    from lorestore.hosts import HOSTS

    if host not in HOSTS:
        raise LorestoreError(
            "invalid_argument",
            f"unknown host {host!r}",
            hint=f"use --host {' | '.join(HOSTS)}",
        )
    if not _ENV_NAME.fullmatch(token_env):
        raise LorestoreError(
            "invalid_argument",
            f"--token-env {token_env!r} is not an environment variable name",
            hint="name the variable that holds the agent's token, e.g. LORESTORE_TOKEN",
        )
    exe = Path(sys.prefix) / "bin" / "lorestore"
    found = str(exe) if exe.exists() else shutil.which("lorestore") or str(exe)
    root = Path.home() if user else _repository_root(cwd)
    store_env: dict[str, str] = {}
    url = None
    if remote is not None:
        url = server_url(remote)
    else:
        settings = load_settings(use_login=False)
        given = store_variables()
        if "LORESTORE_HOME" in given:
            store_env["LORESTORE_HOME"] = str(settings.home.expanduser().resolve())
        if "LORESTORE_DATABASE_URL" in given:
            database = settings.database_url
            if database.startswith(("postgresql://", "postgres://")):
                from urllib.parse import urlsplit

                if urlsplit(database).password is not None:
                    raise LorestoreError(
                        "invalid_argument",
                        "LORESTORE_DATABASE_URL holds a password, and install never writes a "
                        "credential into a host's configuration",
                        hint="keep the password in ~/.pgpass (or PGPASSFILE) and use a URL "
                        "without it, or serve the store (`lorestore serve`) and install with "
                        "--remote URL",
                    )
                store_env["LORESTORE_DATABASE_URL"] = database
            else:
                store_env["LORESTORE_DATABASE_URL"] = f"sqlite:///{sqlite_path(database).resolve()}"
    if hooks is None:
        hooks = host != "codex" or codex_has_hooks()
    return Target(
        host=host,
        scope="user" if user else "project",
        root=root,
        exe=found,
        store_env=store_env,
        remote=url,
        token_env=token_env,
        hooks=hooks,
        codex_home=codex_home() if user and host == "codex" else None,
    )


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def server_url(raw: str) -> str:
    """A server's base URL as install writes it (``/mcp`` is added for the MCP entry); one
    with credentials in it (user:password@, a query string) is refused."""
    from urllib.parse import urlsplit

    from lorestore.core.errors import LorestoreError

    url = raw.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise LorestoreError(
            "invalid_argument",
            f"--remote {raw!r} is not an http:// or https:// URL",
            hint="pass the server's URL as `lorestore serve` printed it, e.g. "
            "https://lorestore.example.com",
        )
    if parts.username or parts.password or parts.query or parts.fragment:
        raise LorestoreError(
            "invalid_argument",
            "--remote must not carry credentials or a query (a token is never written into "
            "a file or a URL)",
            hint="pass the bare server URL; the host sends the token from the environment "
            "variable named by --token-env (default LORESTORE_TOKEN)",
        )
    return url.removesuffix("/mcp")


def _repository_root(cwd: str) -> Path:
    """The top of the git checkout ``cwd`` is in, else ``cwd`` itself."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],  # noqa: S607 - git from PATH
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return Path(cwd).resolve()
    top = done.stdout.strip()
    return Path(top).resolve() if done.returncode == 0 and top else Path(cwd).resolve()


def codex_has_hooks() -> bool:
    """Whether the installed Codex has lifecycle hooks (its ``codex_hooks`` feature)."""
    import shutil
    import subprocess

    codex = shutil.which("codex")
    if codex is None:
        return False
    try:
        done = subprocess.run(  # noqa: S603 - the codex found on PATH
            [codex, "features", "list"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and "codex_hooks" in done.stdout
