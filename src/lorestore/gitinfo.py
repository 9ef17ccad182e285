"""What git says about a working directory: the repository (owner/name from the remote URL),
the branch, the commit, and the blob hashes of files as they are now.

Used by the local entry points (the CLI and the stdio MCP server) so that an agent's host
passes nothing: recall gets its context and a written lesson its provenance from git.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lorestore.core.errors import LorestoreError
from lorestore.core.scope import ladder, parse_scope

# git's scp-like syntax, [user@]host:path (a colon before any slash).
_SCP_LIKE = re.compile(r"^[^/:]+:")
GIT_TIMEOUT_S = 5
GIT_OPERATIONS = frozenset({"memory_recall", "memory_search", "memory_write"})
# An agent calls recall and write many times a session: git is asked again at most this
# often per directory, so a commit or branch switch shows within a second.
CONTEXT_TTL_S = 1.0
_context_cache: dict[str, tuple[float, GitContext | None]] = {}


@dataclass(frozen=True, slots=True)
class GitContext:
    root: str
    repo: str | None
    branch: str | None
    revision: str | None


# The questions _read_context asks first, which read_ahead may start early.
_CONTEXT_ASKED = (
    # One process for the root, HEAD's full ref name and its commit: a recall or a hook
    # starts two git processes, not four. (--symbolic-full-name applies to the arguments
    # after it.)
    ("rev-parse", "--show-toplevel", "HEAD", "--symbolic-full-name", "HEAD"),
    ("remote", "get-url", "origin"),  # with the user's url.*.insteadOf
)
# Started by read_ahead, by (folder, arguments): each answer is collected once, by _git.
_started: dict[tuple[str, tuple[str, ...]], subprocess.Popen[str]] = {}


def read_ahead(cwd: str | Path) -> None:
    """Start the git processes a recall's context in ``cwd`` needs, without waiting for them:
    a caller that has modules to load first (a host's hook, a cold process per event) has
    their answers ready when it asks (git_context). Nothing is cached beyond the one answer
    each: a context read later than CONTEXT_TTL_S still asks git afresh."""
    for args in _CONTEXT_ASKED:
        key = (str(cwd), args)
        if key in _started:
            continue
        try:
            _started[key] = subprocess.Popen(  # noqa: S603 - fixed arguments, no shell
                ["git", *args],  # noqa: S607 - git from PATH, as a developer's shell runs it
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        except OSError:
            return


def _git(cwd: str | Path, *args: str) -> str | None:
    started = _started.pop((str(cwd), args), None)
    if started is not None:
        try:
            out, _ = started.communicate(timeout=GIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            started.kill()
            started.communicate()
            return None
        return out.strip() if started.returncode == 0 else None
    try:
        # Arguments are fixed by this module or repository-relative paths, never a shell line.
        done = subprocess.run(  # noqa: S603
            ["git", *args],  # noqa: S607 - git from PATH, as a developer's shell runs it
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def repo_from_remote(url: str) -> str | None:
    """``owner/name`` of a remote URL (https, ssh, scp-like or a local path), lower-cased:
    the last two segments of its path (Azure's ``org/project/_git/repo`` gives
    ``project/repo``). A URL whose path has fewer than two segments names no repository (a
    host name is not an owner)."""
    text = re.split(r"[?#]", url.strip(), maxsplit=1)[0]
    if "://" in text:
        path = text.split("://", 1)[1].partition("/")[2]  # the host (and port) left out
    elif _SCP_LIKE.match(text):
        path = text.split(":", 1)[1]
    else:
        path = text
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 3 and parts[-2] == "_git":
        parts = [parts[-3], parts[-1]]
    if len(parts) < 2:
        return None
    name = re.sub(r"\.git$", "", parts[-1], flags=re.IGNORECASE)
    return f"{parts[-2]}/{name}".lower() if name else None


def git_context(cwd: str | Path) -> GitContext | None:
    """The repository, branch and HEAD of ``cwd``, or None outside a git work tree."""
    key = str(cwd)
    cached = _context_cache.get(key)
    now = time.monotonic()
    if cached is not None and now - cached[0] < CONTEXT_TTL_S:
        return cached[1]
    context = _read_context(cwd)
    _context_cache[key] = (now, context)
    return context


def _read_context(cwd: str | Path) -> GitContext | None:
    try:
        return _ask_context(cwd)
    finally:
        for args in _CONTEXT_ASKED:
            if (str(cwd), args) in _started:  # started by read_ahead, not needed: collected
                _git(cwd, *args)


def _ask_context(cwd: str | Path) -> GitContext | None:
    # The first question fails as a whole before the first commit (HEAD resolves to
    # nothing), where each part is asked on its own.
    both = _git(cwd, *_CONTEXT_ASKED[0])
    lines = both.splitlines() if both is not None else []
    head: str | None
    revision: str | None
    if len(lines) == 3:
        root, revision, head = lines
    else:
        found = _git(cwd, "rev-parse", "--show-toplevel")
        if found is None:
            return None
        root, head, revision = found, _git(cwd, "symbolic-ref", "-q", "HEAD"), None
    remote = _git(cwd, *_CONTEXT_ASKED[1])
    if remote is None:  # no origin: a checkout's only remote, whatever its name
        remotes = (_git(cwd, "remote") or "").split()
        remote = _git(cwd, "remote", "get-url", remotes[0]) if len(remotes) == 1 else None
    # The branch's own name: `rev-parse --abbrev-ref` says "heads/x" when a tag is named x
    # too; a detached HEAD's full name is "HEAD": no branch.
    branch = head.removeprefix("refs/heads/") if head and head.startswith("refs/heads/") else None
    return GitContext(
        root=root,
        repo=repo_from_remote(remote) if remote else None,
        branch=branch or None,
        revision=revision or None,
    )


def repo_path(cwd: str | Path, path: str, option: str = "--depends-on") -> str:
    """``path`` as git reads a pathspec given in ``cwd`` (relative to it, or absolute),
    written relative to the repository root, as depends_on stores it. Outside a work tree it
    is returned unchanged; a path that leaves the repository is refused. The root comes from
    the cached context: no git process per path."""
    context = git_context(cwd)
    if context is None:
        return path
    full = os.path.join(cwd, path)  # an absolute path stays as it is
    # The directory is resolved, not the file: a symlink in the repository is its own path.
    where = os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full))
    joined = os.path.relpath(where, os.path.realpath(context.root)).replace(os.sep, "/")
    if joined == "." or joined == ".." or joined.startswith("../"):
        raise LorestoreError(
            "invalid_argument",
            f"{option} {path!r} is not a file inside the repository",
            hint="name a file of this repository, relative to the current directory",
        )
    return joined


def blob_hashes(cwd: str | Path, paths: Sequence[str]) -> dict[str, str | None]:
    """The git blob hash of each repository-relative path as the file is now on disk
    (None when it is missing), computed with ``git hash-object``. Outside a work tree nothing
    is known: no path is in the answer (recall holds such a lesson ``file_unknown``)."""
    root = _git(cwd, "rev-parse", "--show-toplevel")
    if root is None or not paths:
        return {}
    present = [p for p in paths if (Path(root) / p).is_file()]
    hashes: dict[str, str | None] = dict.fromkeys(paths)
    if present:
        out = _git(root, "hash-object", "--", *present)
        if out is not None:
            hashes.update(zip(present, out.splitlines(), strict=True))
    return hashes


_HEX = re.compile(r"[0-9a-fA-F]{1,64}")  # a hash, whole or abbreviated: kept as written


def _resolved(cwd: str | Path, given: Any, option: str) -> Any:
    """A revision the caller named by a ref (``HEAD~1``, a branch, a tag) as the commit hash
    git resolves it to in ``cwd``; a hash, or anything but text, as it is. A ref git cannot
    resolve there is ``invalid_argument`` (stored as written, it could never match)."""
    if not isinstance(given, str) or _HEX.fullmatch(given.strip()):
        return given
    commit = _git(cwd, "rev-parse", "--verify", "--quiet", f"{given.strip()}^{{commit}}")
    if commit is None:
        raise LorestoreError(
            "invalid_argument",
            f"{option} {given!r} is not a commit hash, nor a ref git resolves here",
            hint="pass a commit hash, or a ref git knows here such as HEAD~1 or a branch",
        )
    return commit


def _another_repo(given: Any, context: GitContext) -> bool:
    """Whether the caller named a repository other than the checkout's own."""
    if not isinstance(given, str) or context.repo is None:
        return False
    return given.strip().lower() != context.repo


def _scope_repo(scope: Any) -> str | None:
    """The repository a repo:: or branch:: scope names (None for others, or a bad scope,
    which the operation itself refuses)."""
    try:
        return parse_scope(scope).repo if isinstance(scope, str) else None
    except LorestoreError:
        return None


def _forms_ladder(repo: str | None, branch: str | None) -> bool:
    try:
        ladder(repo=repo, branch=branch)
    except LorestoreError:
        return False
    return True


def _recall_context(filled: dict[str, Any], context: GitContext) -> dict[str, Any]:
    """A recall's context from git. A repository or branch git accepts but no scope can hold
    (a 210-character branch name, an owner that is not a scope name) is left out, so recall
    answers from the other rungs; the same value passed by the caller is still refused. A
    branch is filled only beside a repository (a checkout with no usable remote has no branch
    scope)."""
    if _another_repo(filled.get("repo"), context):
        return filled  # another repository than this checkout: its branch and HEAD are not ours
    filled["revision"] = _resolved(context.root, filled.get("revision"), "--revision")
    if filled.get("repo") is None and context.repo and _forms_ladder(context.repo, None):
        filled["repo"] = context.repo
    if (
        filled.get("branch") is None
        and context.branch
        and filled.get("repo")
        and _forms_ladder(filled["repo"], context.branch)
    ):
        filled["branch"] = context.branch
    for name, value in (("revision", context.revision), ("cwd", context.root)):
        if filled.get(name) is None and value is not None:
            filled[name] = value
    return filled


def fill_from_git(operation: str, arguments: dict[str, Any], cwd: str | Path) -> dict[str, Any]:
    """Complete a call's arguments from git, never overriding what the caller gave: a recall's
    context, and a written lesson's source and depends_on blobs."""
    if operation not in GIT_OPERATIONS:
        return arguments
    # A recall's own cwd, when given, is where its context is read (and its files hashed).
    context = git_context(arguments.get("cwd") or cwd)
    if context is None:
        return arguments
    filled = dict(arguments)
    if operation in ("memory_recall", "memory_search"):  # search takes recall's context
        return _recall_context(filled, context)
    source = dict(filled.get("source") or {})
    # A lesson of another repository than this checkout (by its source, else its scope) is
    # not about this checkout's branch, commit or files.
    if _another_repo(source.get("repo") or _scope_repo(filled.get("scope")), context):
        return filled
    source["commit"] = _resolved(context.root, source.get("commit"), "--commit")
    for name, value in (
        ("repo", context.repo),
        ("branch", context.branch),
        ("commit", context.revision),
    ):
        if source.get(name) is None and value is not None:
            source[name] = value
    filled["source"] = source
    refs = filled.get("depends_on")
    if refs:
        missing = [r["path"] for r in refs if not r.get("blob")]
        blobs = blob_hashes(context.root, missing)
        gone = [path for path in missing if blobs.get(path) is None]
        if gone:
            raise LorestoreError(
                "invalid_argument",
                f"depends_on {gone[0]!r}: there is no such file in the checkout at {context.root}",
                hint="name a file of the repository (relative to the current directory), or "
                "give its blob as it is elsewhere: PATH=BLOB (git hash-object PATH)",
                details={"path": gone[0]},
            )
        filled["depends_on"] = [
            r if r.get("blob") else {**r, "blob": blobs.get(r["path"])} for r in refs
        ]
    return filled
