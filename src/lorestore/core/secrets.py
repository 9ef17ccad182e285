"""Secret detection: the patterns of credentials that must never be stored as lesson text
(tokens, keys, private key blocks, passwords in URLs), in one place. A match is reported by the
pattern's name only, never by what it matched, so the refusal itself leaks nothing."""

from __future__ import annotations

import re

# A lorestore bearer token (auth/tokens.py makes them): ``lst_`` (or, made for LoreKit's
# clients, LoreKit's ``lk_rw_`` / ``lk_ro_``) and 43 URL-safe characters. The one spelling of its
# shape: authentication recognises a token by it, the request log redacts it from paths, and a
# lesson or review comment holding one is refused.
LORESTORE_TOKEN = re.compile(r"(?:lst_|lk_rw_|lk_ro_)[A-Za-z0-9_-]{43}")

# name -> pattern. Specific token formats first, so a match is named by the most precise one.
SECRET_PATTERNS: dict[str, re.Pattern[str]] = {
    "private_key_block": re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    "github_token": re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})"),
    "lorestore_token": LORESTORE_TOKEN,
    "aws_access_key": re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    "slack_token": re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    "stripe_key": re.compile(r"\b[sr]k_live_[0-9A-Za-z]{20,}"),
    "google_api_key": re.compile(r"\bAIza[0-9A-Za-z_-]{35}"),
    "jwt": re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    # scheme://user:password@host: a credential written into a connection string or URL. A
    # loopback host's (postgresql://app:app@localhost:5433/app_test) is a development default
    # that lessons about a local setup legitimately name, so it passes.
    "password_in_url": re.compile(
        r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:[^/\s@]+@"
        r"(?!(?:localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\])(?:[:/\s]|$))[^\s/]"
    ),
    # api_key = "…", SECRET: …, password=…: a long value assigned to a secret-sounding name.
    "assigned_secret": re.compile(
        r"(?i)\b(?:api[_-]?key|secret(?:[_-]?key)?|access[_-]?token|auth[_-]?token|password"
        r"|passwd|client[_-]?secret)\b[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9_\-+/=.]{12,}"
    ),
}


# What a text must hold for each pattern to match it: groups of literals, one of each group.
# A substring test costs nanoseconds, while the patterns, which begin at a word boundary, cost
# about 10 µs each on a 500-character lesson, and every write pays for them.
# ``assigned_secret``'s names are looked for case-folded.
_NEEDLES: dict[str, tuple[tuple[str, ...], ...]] = {
    "private_key_block": (("-----BEGIN ",),),
    "github_token": (("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),),
    "lorestore_token": (("lst_", "lk_rw_", "lk_ro_"),),
    "aws_access_key": (("AKIA", "ASIA"),),
    "slack_token": (("xox",),),
    "stripe_key": (("k_live_",),),
    "google_api_key": (("AIza",),),
    "jwt": (("eyJ",),),
    "password_in_url": (("://",), ("@",)),
    "assigned_secret": (("key", "secret", "token", "passw"), (":", "=")),
}
_CASE_FOLDED = frozenset({"assigned_secret"})


# An assignment is looked for around each ``:`` and ``=`` of a text, not from every position
# of it: the name may stand this far before the sign (``client-secret"  =``), the value after.
_BEFORE, _AFTER = 40, 200


def find_secret(text: str) -> str | None:
    """The name of the first secret pattern ``text`` matches, None when it matches none."""
    folded = text.lower()
    for name, pattern in SECRET_PATTERNS.items():
        if not _holds(folded if name in _CASE_FOLDED else text, _NEEDLES[name]):
            continue
        if name == "assigned_secret" and _assigned(pattern, text):
            return name
        if name != "assigned_secret" and pattern.search(text):
            return name
    return None


def _holds(text: str, groups: tuple[tuple[str, ...], ...]) -> bool:
    # Loops, not all()/any() over generators: this runs ten times on every write.
    for group in groups:
        for needle in group:
            if needle in text:
                break
        else:
            return False
    return True


def _assigned(pattern: re.Pattern[str], text: str) -> bool:
    for sign in (":", "="):
        at = text.find(sign)
        while at != -1:
            if pattern.search(text, max(0, at - _BEFORE), at + _AFTER):
                return True
            at = text.find(sign, at + 1)
    return False
