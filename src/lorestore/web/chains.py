"""The audit page's chain verification, run in the background. Verifying recomputes every
event's hash from each chain's first event: O(events), about two seconds at 100k lessons and
growing with the log, too long for a page to wait on. A person asks for it (a POST), it runs
in a thread as that person, and the audit page shows it running, then its result, until they
ask again. Runs are kept by the token a session signed in with, whose rights they were
computed with (another token of the same person may read fewer owners): one run at a time for
each, the latest result kept in the server's memory (a restart forgets them, as it forgets
sessions)."""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from lorestore.core.errors import LorestoreError
from lorestore.core.timestamps import format_ts

if TYPE_CHECKING:
    from lorestore.models import AuditVerifyResult

# Tokens whose latest verification is kept (the oldest is forgotten first).
KEPT = 256


@dataclass(frozen=True, slots=True)
class ChainRun:
    """One verification: running while ``finished_at`` is None; then its result, or the error
    that stopped it. ``id`` tells one run of a token from the next."""

    id: str
    started_at: str
    finished_at: str | None = None
    seconds: float | None = None
    result: AuditVerifyResult | None = None
    error: str | None = None

    @property
    def running(self) -> bool:
        return self.finished_at is None


class ChainLedger:
    """The latest run of each token (by its digest), the oldest forgotten first. Safe across
    threads; a server with several worker processes keeps one for all of them
    (transports/http/workers.py), so a run started through one worker is shown by another."""

    def __init__(self) -> None:
        self._runs: OrderedDict[str, ChainRun] = OrderedDict()
        self._lock = threading.Lock()

    def latest(self, token_hash: str) -> ChainRun | None:
        with self._lock:
            return self._runs.get(token_hash)

    def begin(self, token_hash: str) -> tuple[ChainRun, bool]:
        """The run going for the token, or a new one; and whether it is new (to be run)."""
        with self._lock:
            run = self._runs.get(token_hash)
            if run is not None and run.running:
                return run, False
            run = ChainRun(id=uuid.uuid4().hex, started_at=format_ts(datetime.now(UTC)))
            self._runs[token_hash] = run
            self._runs.move_to_end(token_hash)
            while len(self._runs) > KEPT:
                self._runs.popitem(last=False)
            return run, True

    def finish(self, token_hash: str, run: ChainRun) -> None:
        """Keep the finished ``run``, unless the token's run is no longer that one."""
        with self._lock:
            current = self._runs.get(token_hash)
            if current is not None and current.id == run.id:
                self._runs[token_hash] = run


class ChainChecks:
    """Starts each token's verification in a thread of this process, its runs kept in
    ``ledger`` (this process's own unless given one shared with other workers)."""

    def __init__(self, ledger: ChainLedger | None = None) -> None:
        self.ledger = ledger if ledger is not None else ChainLedger()

    def latest(self, token_hash: str) -> ChainRun | None:
        return self.ledger.latest(token_hash)

    def start(self, token_hash: str, verify: Callable[[], AuditVerifyResult]) -> ChainRun:
        """Run ``verify`` in a thread for the token; the run already going, if there is one."""
        run, new = self.ledger.begin(token_hash)
        if new:
            threading.Thread(
                target=self._run,
                args=(token_hash, run, verify),
                name="lorestore-chain-check",
                daemon=True,
            ).start()
        return run

    def _run(self, token_hash: str, run: ChainRun, verify: Callable[[], AuditVerifyResult]) -> None:
        began = time.perf_counter()
        result, error = None, None
        try:
            result = verify()
        except LorestoreError as exc:
            error = exc.message
        except Exception as exc:
            error = f"the verification failed: {type(exc).__name__}: {exc}"
        done = replace(
            run,
            finished_at=format_ts(datetime.now(UTC)),
            seconds=time.perf_counter() - began,
            result=result,
            error=error,
        )
        self.ledger.finish(token_hash, done)
