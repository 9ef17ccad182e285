"""The server's maintenance schedule: the sweeps run once at start and then every
``LORESTORE_MAINTENANCE_HOURS``, in a worker thread so that requests never wait on them.
``lorestore maintain`` runs the same plan once, for cron."""

from __future__ import annotations

import logging

import anyio

from lorestore.auth.actor import Actor, local_actor
from lorestore.config import Settings
from lorestore.service import LessonService
from lorestore.service.maintenance import Maintenance, MaintenanceReport, SweepPlan

MAINTENANCE_LOG = logging.getLogger("lorestore.maintenance")


def sweep_plan(settings: Settings) -> SweepPlan:
    return SweepPlan(
        purge_expired=settings.purge_expired,
        archive_retention_days=settings.archive_retention_days,
        recall_retention_days=settings.recall_retention_days,
    )


def maintenance_actor(settings: Settings) -> Actor:
    """The store's person (``user:local``, or LORESTORE_USER), marked so that the audit shows
    the sweeps' events came from maintenance (``detail.session``), not from the CLI."""
    return local_actor(
        principal=settings.principal, session="maintenance", agent="lorestore-maintenance"
    )


def maintain_once(service: LessonService, settings: Settings) -> MaintenanceReport:
    return Maintenance(service).maintain(maintenance_actor(settings), sweep_plan(settings))


async def run_schedule(service: LessonService, settings: Settings, hours: float) -> None:
    """Sweep now and every ``hours`` until cancelled; a failed run is logged, not fatal."""
    while True:
        try:
            report = await anyio.to_thread.run_sync(maintain_once, service, settings)
        except Exception:
            MAINTENANCE_LOG.exception("maintenance failed")
        else:
            MAINTENANCE_LOG.info("maintenance", extra={"fields": report.model_dump()})
        await anyio.sleep(hours * 3600)
