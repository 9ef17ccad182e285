"""Settings from the environment (DESIGN §10). The only module that reads ``os.environ``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lorestore.core.errors import LorestoreError

DOCUMENTED_VARIABLES = {
    "LORESTORE_HOME": "config and embedded data (default ~/.lorestore)",
    "LORESTORE_DATABASE_URL": "sqlite:///PATH (default: SQLite in LORESTORE_HOME)",
    "LORESTORE_SESSION": "session id recorded with writes, for recurrence counting",
    "LORESTORE_AGENT": "agent name recorded in the source of writes",
    "LORESTORE_CORROBORATE_AT": "distinct sessions that make a candidate corroborated (default 3)",
    "LORESTORE_TEST_DATABASE_URL": "PostgreSQL for the test suite",
}


@dataclass(frozen=True, slots=True)
class Settings:
    home: Path
    database_url: str
    session: str | None = None
    agent: str | None = None
    corroborate_at: int = 3

    @property
    def sqlite_path(self) -> Path:
        """The embedded database file named by ``database_url``."""
        url = self.database_url
        if not url.startswith("sqlite:///"):
            scheme = url.split(":", 1)[0]
            raise LorestoreError(
                "config_error",
                f"LORESTORE_DATABASE_URL uses {scheme!r}; this build serves SQLite only",
                hint="use sqlite:///PATH, or unset it for the default file in LORESTORE_HOME",
            )
        return Path(url.removeprefix("sqlite:///")).expanduser()


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    home = Path(env.get("LORESTORE_HOME") or Path.home() / ".lorestore").expanduser()
    database_url = env.get("LORESTORE_DATABASE_URL") or f"sqlite:///{home / 'lorestore.db'}"
    raw_threshold = env.get("LORESTORE_CORROBORATE_AT", "3")
    try:
        threshold = int(raw_threshold)
        if threshold < 2:
            raise ValueError
    except ValueError:
        raise LorestoreError(
            "config_error", f"LORESTORE_CORROBORATE_AT={raw_threshold!r} is not a whole number >= 2"
        ) from None
    return Settings(
        home=home,
        database_url=database_url,
        session=env.get("LORESTORE_SESSION") or None,
        agent=env.get("LORESTORE_AGENT") or None,
        corroborate_at=threshold,
    )
