"""Bearer tokens: generation and hashing (the scope patterns that confine them are
``core.patterns``).

A token is ``lst_`` followed by 43 URL-safe characters (256 random bits). Only its SHA-256
is stored; the plaintext is shown once at creation. A token made for LoreKit's clients
(``token create --lorekit``) carries LoreKit's prefix instead, ``lk_rw_`` for a write token and
``lk_ro_`` for a read one (LoreKit's ``doctor`` reads the prefix), with the same 43 characters,
the same hash and the same table: one token system, two spellings.
"""

from __future__ import annotations

import hashlib
import secrets

from lorestore.auth.actor import Permission
from lorestore.core.errors import LorestoreError
from lorestore.core.secrets import LORESTORE_TOKEN

TOKEN_PREFIX = "lst_"  # noqa: S105 - a public prefix, not a secret
# LoreKit's prefixes by the permission they name; only agents' permissions have one.
LOREKIT_PREFIXES: dict[Permission, str] = {"write": "lk_rw_", "read": "lk_ro_"}
PERMISSION_LEVELS: tuple[Permission, ...] = ("read", "write", "review", "admin")


def generate_token(prefix: str = TOKEN_PREFIX) -> str:
    return prefix + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def looks_like_token(token: str) -> bool:
    return LORESTORE_TOKEN.fullmatch(token) is not None


def implied_permissions(permission: str) -> frozenset[Permission]:
    """A permission includes the ones below it: read < write < review < admin."""
    if permission not in PERMISSION_LEVELS:
        raise LorestoreError(
            "invalid_argument",
            f"unknown permission {permission!r}",
            hint="use read, write, review or admin",
        )
    return frozenset(PERMISSION_LEVELS[: PERMISSION_LEVELS.index(permission) + 1])
