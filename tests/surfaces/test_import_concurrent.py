"""Two `lorestore import` processes of one file at once (security issue 19, item 16): on
PostgreSQL the second used to meet the lessons the first had just added at their addresses and
report them as `address_taken`, exit 1. Overlapping imports of the same records end with each
record added by one and unchanged for the other, and both exit 0. The control: a file holding
another lesson at a taken address is still refused."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest
from tests.migrating import pg_url
from tests.pg import Template
from tests.portable import header, lesson, line
from tests.serving import EXE, base_env

pytestmark = pytest.mark.slow

LESSONS = 3000  # two batches: the imports overlap batch by batch


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'shared.db'}"
    template: Template = request.getfixturevalue("pg_template")
    return pg_url(template.app_url(request.getfixturevalue("pg_database")))


def _import(home: Path, url: str, path: Path) -> subprocess.Popen[str]:
    env = base_env(home, LORESTORE_DATABASE_URL=url)
    return subprocess.Popen(
        [EXE, "import", str(path), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_imports_of_one_file_at_once_both_exit_0(tmp_path: Path, url: str) -> None:
    records = [lesson(f"k{i}", f"lesson number {i}") for i in range(LESSONS)]
    path = tmp_path / "same.jsonl"
    path.write_bytes(b"".join(x + b"\n" for x in [header(), *map(line, records)]))
    home = tmp_path / "home"
    (tmp_path / "warm.jsonl").write_bytes(header() + b"\n")
    _import(home, url, tmp_path / "warm.jsonl").communicate(timeout=120)  # migrated up front
    for attempt in range(3):  # each round on a fresh copy of the addresses
        if attempt:
            records = [dict(r, id=_new_id(), key=f"{r['key']}-{attempt}") for r in records]
            path.write_bytes(b"".join(x + b"\n" for x in [header(), *map(line, records)]))
        runs = [_import(home, url, path) for _ in range(2)]
        outs = [run.communicate(timeout=300) for run in runs]
        for run, (_, stderr) in zip(runs, outs, strict=True):
            assert run.returncode == 0, stderr
        results = [json.loads(stdout)["lessons"] for stdout, _ in outs]
        assert [r["refused"] + r["differs"] for r in results] == [0, 0], results
        assert sum(r["added"] for r in results) == LESSONS, results
        assert all(r["added"] + r["unchanged"] == LESSONS for r in results), results
    # The control: another lesson at a taken address is still refused, exit 1.
    other = dict(records[0], id=_new_id(), value="another lesson at the same address")
    (tmp_path / "other.jsonl").write_bytes(header() + b"\n" + line(other) + b"\n")
    stdout, _ = (run := _import(home, url, tmp_path / "other.jsonl")).communicate(timeout=120)
    assert run.returncode == 1
    assert [p["code"] for p in json.loads(stdout)["problems"]] == ["address_taken"]


def _new_id() -> str:
    return str(uuid.uuid4())
