"""The audit page's chain verification, run in the background. Verifying recomputes every
event's hash from each chain's first event: O(events), about two seconds at 100k lessons and
growing with the log, too long for a page to wait on. A person asks for it (a POST), it runs
in a thread as that person, and the audit page shows it running, then its result, until they
ask again. Runs are kept by the token a session signed in with, whose rights they were
computed with (another token of the same person may read fewer owners): one run at a time for
each, the latest result kept in memory (a server restart forgets them, as it forgets
sessions)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from lorestore.core.errors import LorestoreError
from lorestore.core.timestamps import format_ts

if TYPE_CHECKING:
    from lorestore.models import AuditVerifyResult

# Tokens whose latest verification is kept (the oldest is forgotten first).
KEPT = 256


@dataclass(slots=True)
class ChainRun:
    """One verification: running while ``finished_at`` is None; then its result, or the error
    that stopped it."""

    started_at: str
    finished_at: str | None = None
    seconds: float | None = None
    result: AuditVerifyResult | None = None
    error: str | None = None

    @property
    def running(self) -> bool:
        return self.finished_at is None


class ChainChecks:
    """The latest verification asked for with each token (by its digest), and the threads
    that run them."""

    def __init__(self) -> None:
        self._runs: OrderedDict[str, ChainRun] = OrderedDict()
        self._lock = threading.Lock()

    def latest(self, token_hash: str) -> ChainRun | None:
        with self._lock:
            return self._runs.get(token_hash)

    def start(self, token_hash: str, verify: Callable[[], AuditVerifyResult]) -> ChainRun:
        """Run ``verify`` in a thread for the token; the run already going, if there is one."""
        with self._lock:
            run = self._runs.get(token_hash)
            if run is not None and run.running:
                return run
            run = ChainRun(started_at=format_ts(datetime.now(UTC)))
            self._runs[token_hash] = run
            self._runs.move_to_end(token_hash)
            while len(self._runs) > KEPT:
                self._runs.popitem(last=False)
        threading.Thread(
            target=self._run, args=(run, verify), name="lorestore-chain-check", daemon=True
        ).start()
        return run

    @staticmethod
    def _run(run: ChainRun, verify: Callable[[], AuditVerifyResult]) -> None:
        began = time.perf_counter()
        try:
            run.result = verify()
        except LorestoreError as error:
            run.error = error.message
        except Exception as error:
            run.error = f"the verification failed: {type(error).__name__}: {error}"
        run.seconds = time.perf_counter() - began
        run.finished_at = format_ts(datetime.now(UTC))  # last: a page reading it sees the rest
