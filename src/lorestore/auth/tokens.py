"""Bearer tokens: generation, hashing, and the scope patterns that confine them.

A token is ``lst_`` followed by 43 URL-safe characters (256 random bits). Only its SHA-256
is stored; the plaintext is shown once at creation.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from fnmatch import fnmatchcase

from lorestore.auth.actor import Permission
from lorestore.core.errors import LorestoreError
from lorestore.core.scope import Scope, parse_scope

TOKEN_PREFIX = "lst_"  # noqa: S105 - a public prefix, not a secret
_TOKEN_RE = re.compile(r"^lst_[A-Za-z0-9_-]{43}$")
PERMISSION_LEVELS: tuple[Permission, ...] = ("read", "write", "review", "admin")


def generate_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def looks_like_token(token: str) -> bool:
    return bool(_TOKEN_RE.match(token))


def implied_permissions(permission: str) -> frozenset[Permission]:
    """A permission includes the ones below it: read < write < review < admin."""
    if permission not in PERMISSION_LEVELS:
        raise LorestoreError(
            "invalid_argument",
            f"unknown permission {permission!r}",
            hint="use read, write, review or admin",
        )
    return frozenset(PERMISSION_LEVELS[: PERMISSION_LEVELS.index(permission) + 1])


def normalise_pattern(pattern: str) -> str:
    """A scope pattern is a scope, or a scope with ``*`` wildcards (``repo::acme/*``)."""
    text = pattern.strip().lower()
    if "*" not in text:
        return parse_scope(text).text
    probe = text.replace("*", "x")
    try:
        parse_scope(probe)
    except LorestoreError as exc:
        raise LorestoreError(
            "invalid_scope",
            f"scope pattern {pattern!r} is not a scope with wildcards",
            hint='e.g. "repo::acme/*" or "branch::acme/app::*"',
        ) from exc
    return text


def scope_allowed(patterns: tuple[str, ...] | None, scope: Scope) -> bool:
    """Whether a token confined to ``patterns`` may touch ``scope``. A branch scope is
    covered by a pattern that covers its repository."""
    if patterns is None:
        return True
    candidates = [scope.text]
    if scope.kind == "branch":
        candidates.append(f"repo::{scope.repo}")
    return any(fnmatchcase(c, p) for p in patterns for c in candidates)


def pattern_within(pattern: str, patterns: tuple[str, ...]) -> bool:
    """Whether every scope ``pattern`` matches is one that ``patterns`` allow: the pattern,
    read as text, matches one of them (a ``*`` of its own falls inside theirs), or it is a
    branch pattern of a repository they cover."""
    candidates = [pattern]
    if pattern.startswith("branch::"):
        repo = pattern.removeprefix("branch::").split("::", 1)[0]
        if "*" not in repo:
            candidates.append(f"repo::{repo}")
    return any(fnmatchcase(c, p) for p in patterns for c in candidates)
