"""``lorestore doctor``: is lorestore installed in each host and current, is the store (or
server) usable, which scopes this folder resolves to, and, with ``--deep``, does a probe
lesson go all the way round (write, read, recall, delete, in a scratch scope). Every failed
check says how to fix it."""

from __future__ import annotations

import contextlib
import os
import shlex
import uuid
from dataclasses import asdict, dataclass
from typing import Any

from lorestore.core.errors import LorestoreError
from lorestore.hosts import HOSTS


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def installation(host: str, *, user: bool, cwd: str) -> Check | None:
    """The install of ``host`` in one place: None when nothing of it is there."""
    from lorestore.hosts.edits import OwnedFile
    from lorestore.hosts.formats import edits
    from lorestore.hosts.install import resolve_target

    where = "--user" if user else "--project"
    fix = f"lorestore install --host {host} {where}"
    # The files an install with hooks writes there (the store settings do not change which).
    target = resolve_target(
        host,
        user=user,
        remote=None,
        token_env="LORESTORE_TOKEN",  # noqa: S106 - a variable name
        hooks=True,
        cwd=cwd,
    )
    present, missing, stale = [], [], []
    for edit in edits(target):
        try:
            text = edit.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            missing.append(edit.path)
            continue
        try:
            holds = edit.holds(text)
        except LorestoreError as error:
            return Check(f"{host} ({where[2:]})", False, error.message, error.hint)
        if not holds:
            missing.append(edit.path)
        elif isinstance(edit, OwnedFile) and text != edit.content:
            stale.append(edit.path)
            present.append(edit.path)
        else:
            present.append(edit.path)
            stale += [edit.path for cmd in _commands(text) if not _runnable(cmd)]
    if not present:
        return None
    name = f"{host} ({where[2:]})"
    missing = [p for p in missing if not (host == "codex" and p.name == "hooks.json")]
    if stale:
        shown = ", ".join(sorted({str(p) for p in stale}))
        return Check(name, False, f"out of date: {shown}", f"run `{fix}` again")
    if missing:
        shown = ", ".join(str(p) for p in missing)
        return Check(name, False, f"incomplete: {shown} missing", f"run `{fix}` again")
    return Check(name, True, "installed: " + ", ".join(str(p) for p in present))


def _commands(text: str) -> list[str]:
    """The lorestore commands a configuration file names (hooks and MCP entries)."""
    import re

    return re.findall(r"((?:\S+/)?lorestore)['\"]?\s+(?:hook|mcp)\b", text)


def _runnable(path: str) -> bool:
    if "/" not in path:
        import shutil

        return shutil.which(path) is not None
    return os.access(shlex.split(path)[0] if " " in path else path, os.X_OK)


def store_checks() -> list[Check]:
    """The store this process would use: local (opens, schema current) or a server
    (reachable, the token valid, an agent's permission)."""
    from lorestore.config import load_settings

    try:
        settings = load_settings(use_login=False)
    except LorestoreError as error:
        return [Check("settings", False, error.message, error.hint)]
    if settings.remote:
        return [_server_check(settings)]
    if not settings.database_url.startswith(("postgresql://", "postgres://")):
        path = settings.sqlite_path
        if not path.exists():
            return [Check("store", True, f"no store yet at {path}: created on first use")]
    from lorestore.composition import build_service

    try:
        service = build_service(settings)
    except LorestoreError as error:
        return [Check("store", False, error.message, error.hint)]
    service.store.close()
    where = (
        settings.sqlite_path if not settings.database_url.startswith("postgres") else "PostgreSQL"
    )
    return [Check("store", True, f"{where}: opens, schema current")]


def retrieval_check(*, deep: bool = False) -> Check:
    """Hybrid or lexical retrieval in this process (a local store; a server decides for
    itself). With ``deep``, the bundled model is loaded and embeds a probe text, offline."""
    from lorestore.config import load_settings
    from lorestore.semantic.model import INSTALL_HINT, Embedder, availability

    try:
        settings = load_settings(use_login=False)
    except LorestoreError:
        return Check("retrieval", True, "unknown: the settings are unreadable (see above)")
    if settings.remote:
        return Check("retrieval", True, f"decided by the server at {settings.url}")
    state = availability(settings.semantic)
    if not state.installed or state.version is None:
        fix = None if state.version else INSTALL_HINT
        return Check("retrieval", True, f"lexical only: {state.reason}", fix)
    detail = f"hybrid: full-text and {state.model} {state.version} (bundled, offline)"
    if deep:
        try:
            Embedder(state.version).embed(["lorestore doctor probe"])
        except Exception as exc:  # any failure of a third-party model load is reported
            return Check("retrieval", False, f"the model did not load: {exc}", INSTALL_HINT)
        detail += "; the model loads"
    return Check("retrieval", True, detail)


def _server_check(settings: Any) -> Check:
    from lorestore.models import NoParams, TokenCurrentResult
    from lorestore.operations import BY_NAME
    from lorestore.transports.http.client import RemoteClient

    client = RemoteClient(settings.url, settings.token)
    try:
        current = client.invoke(BY_NAME["token_current"], NoParams())
    except LorestoreError as error:
        return Check("server", False, f"{settings.url}: {error.message}", error.hint)
    finally:
        client.close()
    assert isinstance(current, TokenCurrentResult)
    detail = f"{settings.url}: reachable, token valid ({current.permission}, {current.principal})"
    if current.is_person:
        return Check(
            "server",
            False,
            f"{detail}; a person's token, which hooks and `lorestore mcp` refuse",
            "give the agent a write token of its own: `lorestore token create --name AGENT "
            "--permission write`, as LORESTORE_TOKEN in the host's environment",
        )
    return Check("server", True, detail)


def scope_check(cwd: str) -> Check:
    from lorestore.core.scope import ladder
    from lorestore.gitinfo import git_context

    context = git_context(cwd)
    if context is None or context.repo is None:
        return Check(
            "scopes",
            True,
            "global only: not in a git checkout with an origin remote (repository lessons "
            "are not recalled here)",
        )
    projects = _declared_projects(context.repo)
    rungs = ladder(repo=context.repo, branch=context.branch, projects=projects)
    return Check("scopes", True, " -> ".join(r.text for r in rungs))


def _declared_projects(repo: str) -> list[str]:
    """The projects declared to hold ``repo`` (`lorestore project add`), by name, from the
    store or server this process would use; none when there is no store yet or it cannot be
    read (the store check says why)."""
    from lorestore.auth.actor import local_actor
    from lorestore.cli.backend import open_backend
    from lorestore.config import load_settings
    from lorestore.models import NoParams, ProjectListResult
    from lorestore.operations import BY_NAME

    try:
        settings = load_settings(use_login=False)
        local_file = not settings.remote and not settings.database_url.startswith("postgres")
        if local_file and not settings.sqlite_path.exists():
            return []  # doctor creates no store
        backend = open_backend(settings, local_actor(principal=settings.principal))
        try:
            listed = backend.invoke(BY_NAME["project_list"], NoParams())
        finally:
            backend.close()
    except LorestoreError:
        return []
    assert isinstance(listed, ProjectListResult)
    return sorted({p.name for p in listed.projects if repo in p.repos})


def round_trip() -> Check:
    """Write, read, recall and delete a probe lesson in a scratch project scope."""
    from lorestore.auth.actor import local_actor
    from lorestore.cli.backend import open_backend
    from lorestore.config import load_settings
    from lorestore.models import LessonResult, RecallResult
    from lorestore.operations import BY_NAME

    scope = f"project::lorestore-doctor-{uuid.uuid4().hex[:8]}"
    key = "doctor-probe"
    value = f"lorestore doctor probe {uuid.uuid4().hex}"
    settings = load_settings(use_login=False)
    actor = local_actor(principal=settings.principal, agent="lorestore-doctor")
    try:
        backend = open_backend(settings, actor)
    except LorestoreError as error:
        return Check("round trip", False, error.message, error.hint)

    def run(name: str, **data: Any) -> Any:
        op = BY_NAME[name]
        return backend.invoke(op, op.parse(data))

    step = "write"
    try:
        run("memory_write", scope=scope, key=key, value=value)
        step = "read"
        read = run("memory_read", scope=scope, key=key)
        assert isinstance(read, LessonResult) and read.lesson.value == value
        step = "recall"
        recalled = run("memory_recall", project=scope.removeprefix("project::"), task=value)
        assert isinstance(recalled, RecallResult)
        if not any(o.lesson.value == value for o in recalled.offered):
            raise LorestoreError("internal", "the probe lesson was not recalled")
        step = "delete"
        try:
            run("memory_delete", scope=scope, key=key, reason="lorestore doctor --deep probe")
        except LorestoreError as error:
            if error.code != "forbidden":
                raise
            # An agent's token may not erase: the probe is archived instead.
            run("memory_archive", scope=scope, key=key, reason="lorestore doctor --deep probe")
    except LorestoreError as error:
        if step != "write":
            with contextlib.suppress(LorestoreError):
                run("memory_delete", scope=scope, key=key, reason="lorestore doctor --deep probe")
        hint = error.hint or "run the failing step by hand with the CLI to see more"
        return Check("round trip", False, f"{step} failed in {scope}: {error.message}", hint)
    finally:
        backend.close()
    return Check("round trip", True, f"write, read, recall, delete in {scope}")


def run_doctor(
    *, hosts: tuple[str, ...] = HOSTS, deep: bool = False, cwd: str | None = None
) -> list[Check]:
    cwd = cwd or os.getcwd()
    checks: list[Check] = []
    for host in hosts:
        found = False
        for user in (False, True):
            try:
                check = installation(host, user=user, cwd=cwd)
            except LorestoreError as error:
                check = Check(host, False, error.message, error.hint)
            if check is not None:
                found = True
                checks.append(check)
        if not found:
            checks.append(Check(host, True, f"not installed (`lorestore install --host {host}`)"))
    checks += store_checks()
    checks.append(retrieval_check(deep=deep))
    checks.append(scope_check(cwd))
    if deep:
        checks.append(round_trip())
    return checks
