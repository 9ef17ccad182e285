"""Settings from the environment (DESIGN §10) and the person's login credential. The only
module that reads ``os.environ`` and lorestore's own files in ``LORESTORE_HOME``."""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lorestore.core.errors import LorestoreError

# The person's credential for the CLI (`lorestore login`), never an agent's: kept in a file
# only its owner may read, so that it is not in the shell environment every agent host hands
# to the stdio servers it starts.
CREDENTIALS_FILE = "credentials.json"

DOCUMENTED_VARIABLES = {
    "LORESTORE_HOME": "config and embedded data (default ~/.lorestore)",
    "LORESTORE_DATABASE_URL": "sqlite:///PATH or postgresql://... (default: SQLite in HOME)",
    "LORESTORE_USER": "who you are when the CLI talks to PostgreSQL directly (default: local)",
    "LORESTORE_SESSION": "session id recorded with writes, for recurrence counting",
    "LORESTORE_AGENT": "agent name recorded in the source of writes",
    "LORESTORE_CORROBORATE_AT": "distinct sessions that make a candidate corroborated (default 3)",
    "LORESTORE_TEST_DATABASE_URL": "PostgreSQL for the test suite",
    "LORESTORE_URL": "a lorestore server the CLI and `lorestore mcp` use instead of a local store",
    "LORESTORE_TOKEN": "an agent's token for LORESTORE_URL (a person uses `lorestore login`)",
    "LORESTORE_MAX_REQUEST_BYTES": "largest HTTP request body `lorestore serve` accepts",
    "LORESTORE_RATE_LIMIT": "requests a token may make per minute (default 600), or off",
    "LORESTORE_CORS_ORIGINS": "comma-separated origins allowed cross-origin (default: CORS off)",
    "LORESTORE_MAINTENANCE_HOURS": "hours between the server's maintenance runs, or off",
    "LORESTORE_PURGE_EXPIRED": "on/off: maintenance erases expired lessons",
    "LORESTORE_ARCHIVE_RETENTION_DAYS": "days archived lessons are kept before erasure, or off",
    "LORESTORE_RECALL_RETENTION_DAYS": "days recall-log entries are kept, or off",
    "LORESTORE_SEMANTIC": "on/off: hybrid retrieval when lorestore[semantic] is installed",
    "LORESTORE_WEBHOOK_KEY": "Fernet key that encrypts webhook secrets (needed for webhooks)",
    "LORESTORE_WEBHOOK_TTL_DAYS": "expiry of captured lessons: DAYS, or EVENT=DAYS,... (90)",
    "LORESTORE_WEBHOOK_GRACE_HOURS": "hours a rotated webhook secret is still accepted (24)",
    "LORESTORE_WEBHOOK_RETENTION_DAYS": "days delivery ids are kept against replays (30), or off",
    "LORESTORE_GITHUB_TOKEN": "GitHub token that reads repository contents (a captured "
    "comment's depends_on)",
    "LORESTORE_GITHUB_API_URL": "GitHub's REST API (https://api.github.com; Enterprise: its own)",
    "LORESTORE_DASHBOARD_ORIGIN": "the dashboard's origin, whose host the Host header must name",
    "LORESTORE_DASHBOARD_SESSION_HOURS": "hours a dashboard sign-in lasts (default 8)",
}
# The events whose comments become lessons, each with its own expiry (LORESTORE_WEBHOOK_TTL_DAYS).
WEBHOOK_EVENTS = ("pull_request_review_comment", "pull_request_review", "issue_comment")
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "[::1]"})
OFF_WORDS = frozenset({"off", "false", "no", "0"})
ON_WORDS = frozenset({"on", "true", "yes", "1"})
# `lorestore serve --workers`: at most this many processes (transports/http/workers.py).
MAX_WORKERS = 64


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    """GitHub capture: the key that encrypts webhook secrets (None: webhooks cannot be used),
    each event's lesson expiry in days, a rotated secret's grace period, and how long delivery
    ids are kept against replays (None: forever)."""

    key: str | None = field(default=None, repr=False)  # a secret: kept out of logs
    ttl_days: tuple[tuple[str, int], ...] = tuple((e, 90) for e in WEBHOOK_EVENTS)
    grace_hours: int = 24
    retention_days: int | None = 30
    # Reading the commented file's blob at the comment's commit (a lesson's depends_on) needs
    # GitHub's contents API and a token that may read the repository; None: not looked up.
    github_token: str | None = field(default=None, repr=False)  # a secret: kept out of logs
    github_api: str = "https://api.github.com"

    def ttl_for(self, event: str) -> int:
        return dict(self.ttl_days).get(event, 90)


@dataclass(frozen=True, slots=True)
class Settings:
    home: Path
    database_url: str
    session: str | None = None
    agent: str | None = None
    corroborate_at: int = 3
    user: str = "local"
    url: str | None = None
    token: str | None = field(default=None, repr=False)  # a secret: kept out of logs
    max_request_bytes: int = 1024 * 1024
    cors_origins: tuple[str, ...] = ()
    maintenance_hours: float | None = 24.0
    purge_expired: bool = True
    archive_retention_days: int | None = 30
    recall_retention_days: int | None = 30
    rate_limit: int | None = 600
    # Hybrid retrieval when the extra lorestore[semantic] is installed (LORESTORE_SEMANTIC).
    semantic: bool = True
    webhooks: WebhookSettings = field(default_factory=lambda: WebhookSettings())
    # The dashboard (web/): the origin whose host every request must name (None: the address
    # `lorestore serve` listens on) and how long a sign-in lasts.
    dashboard_origin: str | None = None
    dashboard_session_hours: int = 8
    # Where url and token came from: the environment (an agent's token) or the person's
    # `lorestore login` credential file; None on a local store.
    credential: Literal["environment", "login"] | None = None

    @property
    def principal(self) -> str:
        """The principal the CLI acts as on its own store."""
        from lorestore.core.owner import Owner  # pydantic: not for a hook that opens no store

        return Owner.user(self.user).key

    @property
    def remote(self) -> bool:
        """Whether operations go to a server (LORESTORE_URL) instead of a local store."""
        return self.url is not None

    @property
    def sqlite_path(self) -> Path:
        """The embedded database file named by ``database_url``."""
        return sqlite_path(self.database_url)


def sqlite_path(url: str) -> Path:
    """The embedded database file a ``sqlite:///PATH`` URL names, or a config_error."""
    if not url.startswith("sqlite:///") or url == "sqlite:///":
        scheme = url.split(":", 1)[0]
        problem = (
            f"the database URL {url!r} names no file"
            if scheme == "sqlite"
            else f"the database URL uses {scheme!r}; lorestore serves sqlite and postgresql"
        )
        raise LorestoreError(
            "config_error",
            problem,
            hint="use sqlite:///PATH (sqlite:////abs/path for an absolute one) or "
            "postgresql://USER@HOST/DB, or unset LORESTORE_DATABASE_URL for the default "
            "file in LORESTORE_HOME",
        )
    return Path(url.removeprefix("sqlite:///")).expanduser()


def load_settings(env: Mapping[str, str] | None = None, *, use_login: bool = True) -> Settings:
    """The settings of this process. Without LORESTORE_URL, a person's CLI command talks to
    the server they logged in to (``lorestore login``); with ``use_login`` false the
    credential is not read: ``lorestore mcp`` (an agent's process, which acts with a token of
    its own from the environment or on the local store) and the commands that work on a
    store itself (``serve``, ``maintain``, ``db``, ``migrate``)."""
    env = os.environ if env is None else env
    home = home_path(env)
    database_url = env.get("LORESTORE_DATABASE_URL") or f"sqlite:///{home / 'lorestore.db'}"
    raw_threshold = env.get("LORESTORE_CORROBORATE_AT", "3")
    try:
        threshold = int(raw_threshold)
        if threshold < 2:
            raise ValueError
    except ValueError:
        raise LorestoreError(
            "config_error",
            f"LORESTORE_CORROBORATE_AT={raw_threshold!r} is not a whole number >= 2",
            hint="e.g. LORESTORE_CORROBORATE_AT=3 (distinct sessions that corroborate a lesson)",
        ) from None
    return Settings(
        home=home,
        database_url=database_url,
        session=env.get("LORESTORE_SESSION") or None,
        agent=env.get("LORESTORE_AGENT") or None,
        corroborate_at=threshold,
        user=_user(env.get("LORESTORE_USER") or "local"),
        semantic=_switch(env, "LORESTORE_SEMANTIC", True),
        **_remote_settings(env, home if use_login else None),
        **_server_settings(env),
    )


def home_path(env: Mapping[str, str] | None = None) -> Path:
    """``LORESTORE_HOME``, or ``~/.lorestore``."""
    env = os.environ if env is None else env
    return Path(env.get("LORESTORE_HOME") or Path.home() / ".lorestore").expanduser()


@dataclass(frozen=True, slots=True)
class Credential:
    """The server a person logged in to, and their token for it."""

    url: str
    token: str = field(repr=False)


def read_credential(home: Path) -> Credential | None:
    """The credential ``lorestore login`` kept in ``home``, None when there is none."""
    path = home / CREDENTIALS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        credential = Credential(str(data["url"]), str(data["token"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise LorestoreError(
            "config_error",
            f"the login credential {path} cannot be read: {exc}",
            hint="run `lorestore logout` and `lorestore login URL` again",
        ) from None
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        logging.getLogger("lorestore").warning(
            "the login credential %s can be read by other users: `chmod 600 %s`", path, path
        )
    if not credential.url.startswith(("http://", "https://")) or not credential.token:
        raise LorestoreError(
            "config_error",
            f"the login credential {path} holds no server URL and token",
            hint="run `lorestore logout` and `lorestore login URL` again",
        )
    return credential


# The variables that choose a store: a host that runs `lorestore mcp` needs the same ones.
STORE_VARIABLES = ("LORESTORE_HOME", "LORESTORE_DATABASE_URL", "LORESTORE_URL")


def store_variables(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Those of the variables choosing the store that are set here, with their values."""
    env = os.environ if env is None else env
    return {name: env[name] for name in STORE_VARIABLES if env.get(name)}


def codex_home(env: Mapping[str, str] | None = None) -> Path:
    """Codex's own configuration folder: ``CODEX_HOME``, or ``~/.codex`` (user installs)."""
    env = os.environ if env is None else env
    return Path(env.get("CODEX_HOME") or Path.home() / ".codex").expanduser()


def columns_given(env: Mapping[str, str] | None = None) -> bool:
    """Whether COLUMNS says how wide output is (else piped output takes the CLI's width)."""
    env = os.environ if env is None else env
    return env.get("COLUMNS", "").strip().isdigit()


def quiet_pydantic_plugins() -> None:
    """Switch off pydantic's search for plugins in this process, unless the user set it: it
    reads every installed distribution's entry points when the first model is built (10-40
    ms of every start), and lorestore uses none. Called by the entry point only."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def completion_requested(env: Mapping[str, str] | None = None) -> bool:
    """Whether the shell asks for completions (Typer's ``_LORESTORE_COMPLETE``), which only
    the command tree answers."""
    return "_LORESTORE_COMPLETE" in (os.environ if env is None else env)


def help_look(env: Mapping[str, str] | None = None) -> tuple[int | None, bool | None]:
    """The width and the forced terminal (or not) that Typer's help console takes from the
    environment (``typer.rich_utils``: ``TERMINAL_WIDTH``; ``FORCE_COLOR``, ``PY_COLORS`` or
    ``GITHUB_ACTIONS`` force one, ``_TYPER_FORCE_DISABLE_TERMINAL`` none), for the top page
    that cli/toppage.py prints as Typer would. None: Rich's own choice."""
    env = os.environ if env is None else env
    width = env.get("TERMINAL_WIDTH")
    forced = any(env.get(name) for name in ("GITHUB_ACTIONS", "FORCE_COLOR", "PY_COLORS"))
    terminal = False if env.get("_TYPER_FORCE_DISABLE_TERMINAL") else (True if forced else None)
    return (int(width) if width else None), terminal


def _user(raw: str) -> str:
    from lorestore.core.owner import Owner

    try:
        return Owner.user(raw.strip().lower()).name
    except LorestoreError:
        raise _config_error(
            "LORESTORE_USER", raw, "a user name (letters, digits, '.', '_', '-')"
        ) from None


def _config_error(name: str, raw: str, expected: str) -> LorestoreError:
    return LorestoreError("config_error", f"{name}={raw!r} is not {expected}")


def _whole(
    env: Mapping[str, str], name: str, default: int, low: int, high: int, *, off: bool = True
) -> int | None:
    """A whole number in [low, high], or None for "off" (where ``off`` may be said)."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    expected = f"a whole number from {low} to {high}" + (", or off" if off else "")
    if raw.lower() in OFF_WORDS - {"0"}:
        if off:
            return None
        raise _config_error(name, raw, expected)
    if not (raw.isascii() and raw.isdigit()) or not low <= int(raw) <= high:
        raise _config_error(name, raw, expected)
    return int(raw)


def _switch(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw not in ON_WORDS | OFF_WORDS:
        raise _config_error(name, raw, "on or off")
    return raw in ON_WORDS


def _remote_settings(env: Mapping[str, str], home: Path | None) -> dict[str, Any]:
    """The server to use: LORESTORE_URL with LORESTORE_TOKEN, else (``home`` given) the one
    logged in to, else none (the local store)."""
    url = (env.get("LORESTORE_URL") or "").strip().rstrip("/") or None
    token = (env.get("LORESTORE_TOKEN") or "").strip() or None
    if url is None:
        credential = None if home is None else read_credential(home)
        if credential is None:
            return {}
        return {"url": credential.url, "token": credential.token, "credential": "login"}
    if not url.startswith(("http://", "https://")):
        raise _config_error("LORESTORE_URL", url, "an http:// or https:// URL")
    if token is None:
        raise LorestoreError(
            "config_error",
            "LORESTORE_URL is set but LORESTORE_TOKEN is not",
            hint="give an agent a token of its own (`lorestore token create --permission "
            "write`) as LORESTORE_TOKEN; a person signs in with `lorestore login URL` instead; "
            "or unset LORESTORE_URL to use the local store",
        )
    return {"url": url, "token": token, "credential": "environment"}


def _server_settings(env: Mapping[str, str]) -> dict[str, Any]:
    """Settings of ``lorestore serve`` and ``lorestore maintain``."""
    max_bytes = _whole(env, "LORESTORE_MAX_REQUEST_BYTES", 1024 * 1024, 1024, 1024**3, off=False)
    origins = env.get("LORESTORE_CORS_ORIGINS", "")
    hours = _whole(env, "LORESTORE_MAINTENANCE_HOURS", 24, 1, 24 * 365)
    return {
        "max_request_bytes": max_bytes,
        "cors_origins": tuple(o.strip() for o in origins.split(",") if o.strip()),
        "maintenance_hours": None if hours is None else float(hours),
        "purge_expired": _switch(env, "LORESTORE_PURGE_EXPIRED", True),
        "archive_retention_days": _whole(env, "LORESTORE_ARCHIVE_RETENTION_DAYS", 30, 0, 3650),
        "rate_limit": _whole(env, "LORESTORE_RATE_LIMIT", 600, 1, 1_000_000),
        "recall_retention_days": _whole(env, "LORESTORE_RECALL_RETENTION_DAYS", 30, 0, 3650),
        "webhooks": _webhook_settings(env),
        "dashboard_origin": _origin(env, "LORESTORE_DASHBOARD_ORIGIN"),
        "dashboard_session_hours": _whole(
            env, "LORESTORE_DASHBOARD_SESSION_HOURS", 8, 1, 24 * 30, off=False
        ),
    }


def _webhook_settings(env: Mapping[str, str]) -> WebhookSettings:
    grace = _whole(env, "LORESTORE_WEBHOOK_GRACE_HOURS", 24, 0, 24 * 90, off=False)
    return WebhookSettings(
        key=(env.get("LORESTORE_WEBHOOK_KEY") or "").strip() or None,
        ttl_days=_webhook_ttls(env.get("LORESTORE_WEBHOOK_TTL_DAYS", "")),
        grace_hours=24 if grace is None else grace,
        retention_days=_whole(env, "LORESTORE_WEBHOOK_RETENTION_DAYS", 30, 1, 3650),
        github_token=(env.get("LORESTORE_GITHUB_TOKEN") or "").strip() or None,
        github_api=_github_api(env.get("LORESTORE_GITHUB_API_URL", "")),
    )


def _github_api(raw: str) -> str:
    """GitHub's REST API: https (http only on a loopback host, as a test's or a proxy's)."""
    url = raw.strip().rstrip("/") or "https://api.github.com"
    host = url.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0]
    if not (url.startswith("https://") or (url.startswith("http://") and host in _LOOPBACK)):
        raise _config_error(
            "LORESTORE_GITHUB_API_URL", raw, "an https:// URL (http:// only on a loopback host)"
        )
    return url


def _webhook_ttls(raw: str) -> tuple[tuple[str, int], ...]:
    """``90`` for every event, or ``issue_comment=30,pull_request_review=60`` (the others 90)."""
    expected = "DAYS (1-365) or EVENT=DAYS,... with EVENT one of " + ", ".join(WEBHOOK_EVENTS)
    days = dict.fromkeys(WEBHOOK_EVENTS, 90)
    text = raw.strip()
    if not text:
        return tuple(days.items())
    if "=" not in text:
        text = ",".join(f"{event}={text}" for event in WEBHOOK_EVENTS)
    for part in filter(None, (p.strip() for p in text.split(","))):
        event, _, number = (x.strip() for x in part.partition("="))
        if event not in days or not number.isdigit() or not 1 <= int(number) <= 365:
            raise _config_error("LORESTORE_WEBHOOK_TTL_DAYS", raw, expected)
        days[event] = int(number)
    return tuple(days.items())


def _origin(env: Mapping[str, str], name: str) -> str | None:
    """An origin (``scheme://host[:port]``, no path), or None when unset."""
    raw = env.get(name, "").strip().rstrip("/")
    if not raw:
        return None
    scheme, sep, rest = raw.partition("://")
    if scheme not in ("http", "https") or not sep or not rest or "/" in rest or "@" in rest:
        raise LorestoreError(
            "config_error",
            f"{name}={raw!r} is not an origin",
            hint=f"give scheme, host and port, e.g. {name}=https://lorestore.example.com:8443",
        )
    return f"{scheme}://{rest.lower()}"
