"""Loads named SQL from a ``.sql`` file: each query is ``-- name: NAME``, a one-line purpose
comment, then the statement. Keeping SQL in files keeps it reviewable as SQL."""

from __future__ import annotations

import re
from importlib import resources

_HEADER = re.compile(r"^-- name: ([a-z_]+)\s*$", re.MULTILINE)


def load_queries(package: str, filename: str) -> dict[str, str]:
    text = resources.files(package).joinpath(filename).read_text("utf-8")
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
