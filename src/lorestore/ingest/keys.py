"""Webhook secrets: made, encrypted at rest with the server's key (Fernet: AES-128-CBC with an
HMAC-SHA256, from ``cryptography``), and the signature GitHub puts on a delivery checked against
them (``X-Hub-Signature-256``: HMAC-SHA256 of the raw body, compared in constant time)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from typing import TYPE_CHECKING

from lorestore.core.errors import LorestoreError

if TYPE_CHECKING:
    from cryptography.fernet import Fernet

SIGNATURE_PREFIX = "sha256="
KEY_HINT = (
    "set LORESTORE_WEBHOOK_KEY on the server (and for `lorestore webhook` on its store) to a "
    "Fernet key: `python -c 'from cryptography.fernet import Fernet; "
    "print(Fernet.generate_key().decode())'`; keep it out of the database's backups"
)


def new_secret() -> str:
    """A webhook secret: 256 random bits, URL-safe (GitHub takes any text)."""
    return secrets.token_urlsafe(32)


class SecretBox:
    """Encrypts and decrypts webhook secrets with the server's key (None: no key, and any use
    is a config_error saying how to set one). The cipher is built on first use: a CLI command
    that never touches a webhook does not import ``cryptography``."""

    def __init__(self, key: str | None) -> None:
        self._key = key
        self._fernet: Fernet | None = None
        # Every delivery tries every webhook's secret: each is decrypted once per process.
        self._opened: dict[str, str | None] = {}

    def _box(self) -> Fernet:
        if self._fernet is not None:
            return self._fernet
        if self._key is None:
            raise LorestoreError(
                "config_error",
                "webhook secrets are stored encrypted, and this server has no key "
                "(LORESTORE_WEBHOOK_KEY is not set)",
                hint=KEY_HINT,
            )
        from cryptography.fernet import Fernet

        try:
            self._fernet = Fernet(self._key.encode("ascii"))
        except (ValueError, UnicodeError):
            raise LorestoreError(
                "config_error",
                "LORESTORE_WEBHOOK_KEY is not a Fernet key (32 bytes, URL-safe base64)",
                hint=KEY_HINT,
            ) from None
        return self._fernet

    def seal(self, secret: str) -> str:
        return self._box().encrypt(secret.encode("utf-8")).decode("ascii")

    def open(self, sealed: str) -> str | None:
        """The secret, or None when it was sealed with another key (it then matches nothing)."""
        if sealed in self._opened:
            return self._opened[sealed]
        from cryptography.fernet import InvalidToken

        box = self._box()
        try:
            secret: str | None = box.decrypt(sealed.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeError):
            secret = None
        if len(self._opened) >= 4096:  # bounded: rotations leave old ciphertexts behind
            self._opened.clear()
        self._opened[sealed] = secret
        return secret


def sign(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub sends for ``body`` signed with ``secret``."""
    digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return SIGNATURE_PREFIX + digest


def signed_by(signature: str, body: bytes, candidates: Iterable[str]) -> bool:
    """Whether ``signature`` is ``body`` signed with one of the secrets, each compared in
    constant time (every candidate is tried, so the time says nothing of which matched)."""
    given = signature.strip().encode("ascii", "replace")
    matched = False
    for secret in candidates:
        matched |= hmac.compare_digest(sign(secret, body).encode("ascii"), given)
    return matched
