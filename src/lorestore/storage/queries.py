"""Loads named SQL from a ``.sql`` file: each query is ``-- name: NAME``, a one-line purpose
comment, then the statement. Keeping SQL in files keeps it reviewable as SQL."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

_HEADER = re.compile(r"^-- name: ([a-z_]+)\s*$", re.MULTILINE)


def package_folder(package: str) -> Path:
    """The folder of one of lorestore's packages (a namespace package, such as a folder of
    migrations, too). lorestore ships as files (a wheel or a checkout), so its SQL is read
    from there; importlib.resources, which could read a zip too, costs a cold process (a
    host's hook) more to import than the files cost to read."""
    return Path(next(iter(importlib.import_module(package).__path__)))


def load_queries(package: str, filename: str) -> dict[str, str]:
    text = (package_folder(package) / filename).read_text("utf-8")
    parts = _HEADER.split(text)
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        lines = body.strip().splitlines()
        if not lines or not lines[0].startswith("-- "):
            raise ValueError(f"query {name} in {filename} lacks its one-line purpose comment")
        if name in queries:
            raise ValueError(f"query {name} defined twice in {filename}")
        queries[name] = "\n".join(lines[1:]).strip().rstrip(";")
    return queries
