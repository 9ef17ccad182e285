"""The server's maintenance schedule: a run (``service/maintenance.py`` says what it does) once
at start and then every ``LORESTORE_MAINTENANCE_HOURS``, in a thread of its own so that
requests never wait on it. ``lorestore serve`` runs it in the process that listens: the only
one, or the supervisor of several workers, once for all (transports/http/workers.py)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from functools import partial

from lorestore.composition import sweep_plan
from lorestore.config import Settings
from lorestore.service import LessonService
from lorestore.service.maintenance import Maintenance, MaintenanceReport

MAINTENANCE_LOG = logging.getLogger("lorestore.maintenance")


class Schedule:
    """``run`` now and every ``hours`` in a thread of its own, until ``stop``; a failed run is
    logged, not fatal."""

    def __init__(self, run: Callable[[], MaintenanceReport], hours: float) -> None:
        self._run, self._hours = run, hours
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="lorestore-maintenance")

    @classmethod
    def of(cls, service: LessonService, settings: Settings) -> Schedule | None:
        """The server's schedule, or None when maintenance is left to cron (``off``)."""
        if settings.maintenance_hours is None:
            return None
        plan = sweep_plan(settings)
        run = partial(Maintenance(service).run, plan, principal=settings.principal)
        return cls(run, settings.maintenance_hours)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask it to stop and wait for a run in progress to end."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        while not self._stopped.is_set():
            try:
                report = self._run()
            except Exception:
                MAINTENANCE_LOG.exception("maintenance failed")
            else:
                MAINTENANCE_LOG.info("maintenance", extra={"fields": report.model_dump()})
            self._stopped.wait(self._hours * 3600)
