"""LoreKit's real, unmodified CLI (``shared/peers/lorekit-cli``, run with node) for the tests
that compare with it or drive lorestore through it. Under ``CI=true`` a test that needs it
fails rather than skips."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest


def _lorekit_bin() -> Path:
    """LoreKit's CLI in ``shared/peers`` beside the checkout (or beside a folder above it, for
    a clone made deeper down), else where this machine keeps the shared folder."""
    checkout = Path(__file__).resolve().parents[1]
    for folder in (*checkout.parents, Path("/work")):
        candidate = folder / "shared" / "peers" / "lorekit-cli" / "bin"
        if (candidate / "lorekit.mjs").exists():
            return candidate
    return checkout.parent / "shared" / "peers" / "lorekit-cli" / "bin"


LOREKIT = _lorekit_bin()
SKILLS = LOREKIT.parent / "skill"


def node_or_skip() -> str:
    """The node executable, when node and LoreKit's CLI are here; else skip (fail under CI)."""
    node = shutil.which("node")
    if node is None or not (LOREKIT / "lorekit.mjs").exists():
        message = "LoreKit's CLI needs node and ../shared/peers/lorekit-cli"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (CI=true: never skipped)")
        pytest.skip(message)
    return node


@dataclass
class LoreKitCli:
    """LoreKit's CLI in remote mode against ``endpoint``, in a home of its own (with its skills
    installed, so that ``doctor`` checks only what a server controls), run in ``cwd``."""

    node: str
    home: Path
    cwd: Path
    endpoint: str
    token: str
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        skills = self.home / ".claude" / "skills"
        if not skills.exists():
            shutil.copytree(SKILLS, skills)

    def environment(self, **extra: str) -> dict[str, str]:
        clean = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("LOREKIT_", "LORESTORE_", "GITHUB_"))
        }
        return {
            **clean,
            "HOME": str(self.home),
            "LOREKIT_HOME": str(self.home / ".lorekit"),
            "LOREKIT_TELEMETRY": "0",
            # The hooks keep per-session state here (else in the shared temporary folder).
            "CLAUDE_PLUGIN_DATA": str(self.home / "hook-state"),
            "LOREKIT_ENDPOINT": self.endpoint,
            "LOREKIT_TOKEN": self.token,
            **self.env,
            **extra,
        }

    def __call__(
        self, *args: str, input: str | None = None, token: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return self.run(*args, input=input, env={"LOREKIT_TOKEN": token} if token else {})

    def run(
        self, *args: str, input: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """The CLI with ``env`` over its environment."""
        return subprocess.run(
            [self.node, str(LOREKIT / "lorekit.mjs"), *args],
            cwd=self.cwd,
            env=self.environment(**(env or {})),
            input=input,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
