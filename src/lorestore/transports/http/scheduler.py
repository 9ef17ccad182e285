"""The server's maintenance schedule: a run (``service/maintenance.py`` says what it does) once
at start and then every ``LORESTORE_MAINTENANCE_HOURS``, in a worker thread so that requests
never wait on it."""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio

from lorestore.service.maintenance import MaintenanceReport
from lorestore.transports.threads import long_calls

MAINTENANCE_LOG = logging.getLogger("lorestore.maintenance")


async def run_schedule(run: Callable[[], MaintenanceReport], hours: float) -> None:
    """``run`` now and every ``hours`` until cancelled; a failed run is logged, not fatal."""
    while True:
        try:
            report = await anyio.to_thread.run_sync(run, limiter=long_calls())
        except Exception:
            MAINTENANCE_LOG.exception("maintenance failed")
        else:
            MAINTENANCE_LOG.info("maintenance", extra={"fields": report.model_dump()})
        await anyio.sleep(hours * 3600)
