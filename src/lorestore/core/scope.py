"""The scope grammar of DESIGN §4: four forms, normalisation, corrected-form hints, the ladder.

A scope is ``global``, ``project::NAME``, ``repo::OWNER/NAME`` or
``branch::OWNER/NAME::BRANCH``. Scopes compare in lower case; a malformed scope is refused
with a hint that is itself a valid scope wherever the intent can be recovered.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from lorestore.core.errors import LorestoreError

ScopeKind = Literal["global", "project", "repo", "branch"]

MAX_SCOPE_LENGTH = 300
_NAME = r"[a-z0-9](?:[a-z0-9._-]{0,98}[a-z0-9_])?"
_NAME_RE = re.compile(rf"^{_NAME}$")
# A repository's own name may also start or end with ".", "_" or "-" (GitHub's ".github",
# "_site", "-dotfiles"), but is never "." or "..": a path segment, whatever the host.
_REPO_NAME_RE = re.compile(r"^(?!\.\.?$)[a-z0-9._-]{1,100}$")
# Git ref rules that matter here: no whitespace, control or ~^:?*[\ characters, no "..",
# no empty path segment, no leading "-" and no trailing "." or ".lock".
_BRANCH_RE = re.compile(
    r"^(?!-)(?!.*\.\.)(?!.*//)(?!.*\.lock$)[^\s~^:?*\[\\\x00-\x1f\x7f]{1,200}(?<![./])$"
)
_KINDS: tuple[ScopeKind, ...] = ("global", "project", "repo", "branch")
_KIND_ALIASES = {
    "projects": "project",
    "proj": "project",
    "repos": "repo",
    "repository": "repo",
    "repositories": "repo",
    "branches": "branch",
    "br": "branch",
    "all": "global",
    "*": "global",
}
_GITHUB_URL_RE = re.compile(
    r"^(?:https?://|git@)(?:www\.)?github\.com[:/]([^/\s]+)/([^/\s]+?)(?:\.git)?/?$"
)


@dataclass(frozen=True, slots=True)
class Scope:
    """A parsed, normalised scope. ``text`` is the canonical string stored and compared."""

    kind: ScopeKind
    project: str | None = None
    owner: str | None = None
    name: str | None = None
    branch: str | None = None

    @property
    def text(self) -> str:
        if self.kind == "global":
            return "global"
        if self.kind == "project":
            return f"project::{self.project}"
        if self.kind == "repo":
            return f"repo::{self.owner}/{self.name}"
        return f"branch::{self.owner}/{self.name}::{self.branch}"

    @property
    def repo(self) -> str | None:
        """``owner/name`` for repo and branch scopes."""
        return f"{self.owner}/{self.name}" if self.owner else None

    def broader(self) -> tuple[Scope, ...]:
        """The scopes whose rules also bind this one, nearest first (excluding itself).

        A project's repositories are not known to the grammar, so a repo or branch scope
        climbs to ``global`` without passing a project.
        """
        if self.kind == "branch":
            return (Scope("repo", owner=self.owner, name=self.name), GLOBAL)
        if self.kind in ("repo", "project"):
            return (GLOBAL,)
        return ()

    def __str__(self) -> str:
        return self.text


GLOBAL = Scope("global")


def _invalid(
    raw: str, why: str, corrected: str | None = None, example: str | None = None
) -> LorestoreError:
    hint = None
    if corrected is not None:
        hint = f'{why}: "{corrected}"'
    elif example is not None:
        hint = f"{why}, e.g. {example}"
    return LorestoreError(
        "invalid_scope",
        f"invalid scope {raw!r}: {why}",
        hint=hint or why,
        details={"scope": raw, **({"corrected": corrected} if corrected else {})},
    )


@lru_cache(maxsize=4096)
def parse_scope(raw: str) -> Scope:
    """Parse and normalise ``raw``; raise ``invalid_scope`` with a corrected form as hint.

    Cached: an agent names the same few scopes over and over (a refusal is not cached)."""
    if not isinstance(raw, str) or not raw.strip():
        raise LorestoreError(
            "invalid_scope",
            "a scope is required; lorestore never reads or writes 'all scopes' by default",
            hint='use "global" for lessons that apply everywhere, or "repo::OWNER/NAME"',
            details={"scope": raw if isinstance(raw, str) else None},
        )
    if len(raw) > MAX_SCOPE_LENGTH:
        raise _invalid(raw[:40] + "...", f"longer than {MAX_SCOPE_LENGTH} characters")
    text = raw.strip()
    lowered = text.lower()
    if lowered == "global":
        return GLOBAL
    url = _GITHUB_URL_RE.match(text)
    if url:
        fixed = f"repo::{url.group(1)}/{url.group(2)}".lower()
        raise _invalid(raw, "a scope names a repository as owner/name, not a URL", fixed)
    parts = lowered.split("::")
    if len(parts) == 1:
        raise _suggest_without_separator(raw, text)
    kind_word, rest = parts[0], parts[1:]
    kind = kind_word if kind_word in _KINDS else _KIND_ALIASES.get(kind_word)
    if kind is None:
        raise _invalid(
            raw,
            f"unknown scope kind {kind_word!r}; use global, project, repo or branch",
            example='"repo::acme/app"',
        )
    if kind != kind_word:
        fixed = "global" if kind == "global" else "::".join([kind, *rest])
        raise _invalid(raw, f"the scope kind is spelled {kind!r}", fixed)
    if kind == "global":
        raise _invalid(raw, '"global" takes no name', "global")
    return _parse_named(raw, kind, rest, original_branch=text.split("::", 2)[-1])


def _parse_named(raw: str, kind: str, rest: list[str], original_branch: str) -> Scope:
    if kind == "project":
        if len(rest) != 1 or not rest[0]:
            raise _invalid(raw, "a project scope is project::NAME", example='"project::billing"')
        name = rest[0].strip("/")
        if not _NAME_RE.match(name):
            raise _invalid(
                raw,
                "a project name uses letters, digits, '.', '_' and '-'",
                example='"project::billing"',
            )
        return Scope("project", project=name)
    owner, name = _parse_repo(raw, kind, rest[0] if rest else "")
    if kind == "repo":
        if len(rest) == 2 and rest[1]:
            raise _invalid(
                raw,
                "a repo scope has no branch part; a branch scope is branch::OWNER/NAME::BRANCH",
                f"branch::{owner}/{name}::{rest[1]}",
            )
        if len(rest) != 1:
            raise _invalid(raw, "a repo scope is repo::OWNER/NAME", f"repo::{owner}/{name}")
        return Scope("repo", owner=owner, name=name)
    if len(rest) < 2 or not rest[1]:
        raise _invalid(
            raw, "a branch scope names its branch", example=f'"branch::{owner}/{name}::main"'
        )
    branch = "::".join(rest[1:])
    if "::" in branch or not _BRANCH_RE.match(branch):
        raise _invalid(
            raw,
            f"{original_branch!r} is not a valid git branch name",
            example=f'"branch::{owner}/{name}::feature/login"',
        )
    return Scope("branch", owner=owner, name=name, branch=branch)


def _parse_repo(raw: str, kind: str, text: str) -> tuple[str, str]:
    pieces = [p for p in text.strip("/").split("/") if p]
    if len(pieces) == 2 and _is_repo(*pieces):
        return pieces[0], pieces[1]
    if len(pieces) == 1:
        raise _invalid(
            raw,
            f"a {kind} scope names the repository as OWNER/NAME",
            example=f'"{kind}::OWNER/{pieces[0]}" or "{kind}::{pieces[0]}/NAME"',
        )
    raise _invalid(
        raw,
        "a repository is OWNER/NAME using letters, digits, '.', '_' and '-' (the owner starts "
        "with a letter or digit; the name is not '.' or '..')",
        example=f'"{kind}::acme/app"',
    )


def _is_repo(owner: str, name: str) -> bool:
    return bool(_NAME_RE.match(owner) and _REPO_NAME_RE.match(name))


def _suggest_without_separator(raw: str, text: str) -> LorestoreError:
    """Recover the intent of a scope written without ``::``: ``repo:acme/app``, ``acme/app``."""
    lowered = text.lower()
    for kind in ("branch", "project", "repo"):
        for sep in (":", "/", "="):
            if lowered.startswith(kind + sep) or lowered.startswith(kind + "s" + sep):
                body = lowered.split(sep, 1)[1].lstrip(":")
                if kind == "branch" and ":" in body:
                    repo, _, branch = body.partition(":")
                    body = f"{repo}::{branch.lstrip(':')}"
                candidate = f"{kind}::{body}"
                try:
                    parse_scope(candidate)
                except LorestoreError:
                    return _invalid(raw, 'use "::" as the separator', example=f'"{kind}::..."')
                return _invalid(raw, 'use "::" as the separator', candidate)
    if lowered.count("/") == 1 and _is_repo(*lowered.split("/")):
        return _invalid(raw, "a repository scope starts with repo::", f"repo::{lowered}")
    return _invalid(
        raw,
        "a scope is global, project::NAME, repo::OWNER/NAME or branch::OWNER/NAME::BRANCH",
        example='"repo::acme/app"',
    )


def normalise_scope(raw: str) -> str:
    """The canonical text of ``raw``; raises ``invalid_scope`` like :func:`parse_scope`."""
    return parse_scope(raw).text


def repository(repo: str) -> str:
    """The canonical ``owner/name`` of a repository a caller names (not a scope); refused with
    ``invalid_argument`` when no repo:: scope could hold it."""
    try:
        owner, name = _parse_repo(repo, "repo", repo.strip().lower())
    except LorestoreError as exc:  # the caller named a repository, not a scope
        raise LorestoreError(
            "invalid_argument",
            f"repo {repo!r}: a repository is OWNER/NAME, e.g. acme/app",
            hint="pass the repository as OWNER/NAME (not a scope); in a git checkout the "
            "CLI reads it from the origin remote",
            details={"repo": repo},
        ) from exc
    return f"{owner}/{name}"


def ladder(
    *,
    repo: str | None = None,
    branch: str | None = None,
    project: str | None = None,
    projects: Sequence[str] = (),
) -> tuple[Scope, ...]:
    """The narrow-to-broad ladder of a context: branch -> repo -> project(s) -> global. A
    branch names a scope only with its repository; alone it is refused, not passed over.
    Several projects are rungs in the order given (``project`` first), each once."""
    if branch and not repo:
        raise LorestoreError(
            "invalid_argument",
            f"branch {branch!r} was given without its repository",
            hint="pass repo as OWNER/NAME too (branch scopes are branch::OWNER/NAME::BRANCH); "
            "in a git checkout the CLI reads it from the origin remote",
        )
    rungs: list[Scope] = []
    if repo:
        owner, name = repository(repo).split("/", 1)
        if branch:
            rungs.append(parse_scope(f"branch::{owner}/{name}::{branch}"))
        rungs.append(Scope("repo", owner=owner, name=name))
    names = [project] if project else []
    for scope in dict.fromkeys(parse_scope(f"project::{n}") for n in [*names, *projects]):
        rungs.append(scope)
    rungs.append(GLOBAL)
    return tuple(rungs)
