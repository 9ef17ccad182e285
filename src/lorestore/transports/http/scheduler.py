"""The server's maintenance schedule: a run (``service/maintenance.py`` says what it does) once
at start and then every ``LORESTORE_MAINTENANCE_HOURS``, in a worker thread so that requests
never wait on it. A server of one process runs it in its event loop (``run_schedule``); one
with several worker processes in its supervising process (``Schedule``), once for all."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import anyio

from lorestore.service.maintenance import MaintenanceReport
from lorestore.transports.threads import long_calls

MAINTENANCE_LOG = logging.getLogger("lorestore.maintenance")


async def run_schedule(run: Callable[[], MaintenanceReport], hours: float) -> None:
    """``run`` now and every ``hours`` until cancelled; a failed run is logged, not fatal."""
    while True:
        await anyio.to_thread.run_sync(run_logged, run, limiter=long_calls())
        await anyio.sleep(hours * 3600)


def run_logged(run: Callable[[], MaintenanceReport]) -> None:
    """One run, its report logged; a failure is logged, never raised."""
    try:
        report = run()
    except Exception:
        MAINTENANCE_LOG.exception("maintenance failed")
    else:
        MAINTENANCE_LOG.info("maintenance", extra={"fields": report.model_dump()})


class Schedule:
    """``run`` now and every ``hours`` in a thread of its own, until ``stop``."""

    def __init__(self, run: Callable[[], MaintenanceReport], hours: float) -> None:
        self._run, self._hours = run, hours
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="lorestore-maintenance")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask it to stop and wait for a run in progress to end."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        while not self._stopped.is_set():
            run_logged(self._run)
            self._stopped.wait(self._hours * 3600)
