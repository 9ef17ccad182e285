"""The dashboard's background verification of the hash chains (web/chains.py): one run at a
time for each token, its result or its error kept, the oldest tokens' runs forgotten."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from lorestore.core.errors import LorestoreError
from lorestore.models import AuditVerifyResult
from lorestore.web import chains
from lorestore.web.chains import ChainChecks, ChainLedger, ChainRun


def finished(checks: ChainChecks, token: str) -> ChainRun:
    deadline = time.monotonic() + 10
    while (run := checks.latest(token)) is None or run.running:
        assert time.monotonic() < deadline, "the run did not finish"
        time.sleep(0.005)
    return run


def test_a_run_is_shown_running_then_with_its_result_and_runs_once_at_a_time() -> None:
    checks, gate, calls = ChainChecks(), threading.Event(), []

    def verify() -> AuditVerifyResult:
        calls.append(1)
        gate.wait(10)
        return AuditVerifyResult(ok=True, chains=[])

    run = checks.start("t1", verify)
    assert run.running and checks.latest("t1") == run
    assert checks.start("t1", verify) == run  # asked again while it runs: the same run
    assert checks.latest("t2") is None  # another token's page shows none of it
    gate.set()
    done = finished(checks, "t1")
    assert done.id == run.id and done.result == AuditVerifyResult(ok=True, chains=[])
    assert done.error is None and done.seconds is not None and done.finished_at
    again = checks.start("t1", verify)  # asked after it finished: a new run
    assert again.id != run.id and again.running
    finished(checks, "t1")
    assert calls == [1, 1]


def test_a_finished_run_does_not_replace_a_newer_one() -> None:
    ledger = ChainLedger()
    first, new = ledger.begin("t1")
    assert new
    ledger.finish("t1", replace(first, finished_at="2026-12-05T00:00:00Z"))
    second, new = ledger.begin("t1")
    assert new and second.id != first.id
    ledger.finish("t1", replace(first, finished_at="2026-12-05T00:00:01Z"))  # late, stale
    assert ledger.latest("t1") == second  # control: finishing the current one is kept
    ledger.finish("t1", replace(second, finished_at="2026-12-05T00:00:02Z"))
    latest = ledger.latest("t1")
    assert latest is not None and latest.finished_at == "2026-12-05T00:00:02Z"


@pytest.mark.parametrize(
    ("raised", "shown"),
    [
        (LorestoreError("forbidden", "no read permission"), "no read permission"),
        (RuntimeError("disk gone"), "the verification failed: RuntimeError: disk gone"),
    ],
)
def test_an_error_is_kept_for_the_page_not_lost_in_the_thread(
    raised: Exception, shown: str
) -> None:
    def verify() -> AuditVerifyResult:
        raise raised

    checks = ChainChecks()
    checks.start("t1", verify)
    run = finished(checks, "t1")
    assert run.result is None and run.error == shown


def test_the_oldest_tokens_runs_are_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chains, "KEPT", 2)
    checks = ChainChecks()
    for token in ("t1", "t2", "t3"):
        checks.start(token, lambda: AuditVerifyResult(ok=True, chains=[]))
        finished(checks, token)
    assert checks.latest("t1") is None
    assert checks.latest("t2") is not None and checks.latest("t3") is not None
