"""The maintenance sweeps: expired lessons, archived lessons past their retention, recall-log
retention and the webhook deliveries kept against replays; which run, in what order and for
which owners. ``lorestore serve`` schedules a run (``transports/http/scheduler.py``) and
``lorestore maintain`` makes one; each sweep that runs leaves one audit event with its counts,
beside the purge events of the lessons it erased.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from lorestore.auth.actor import ALL_PERMISSIONS, Actor, local_actor
from lorestore.core.timestamps import format_ts
from lorestore.models import NoParams, PurgeParams
from lorestore.service import LessonService

SweepName = Literal["expired", "archived", "recall_log", "webhook_deliveries"]


@dataclass(frozen=True, slots=True)
class SweepPlan:
    """Which sweeps run; a retention of None switches that sweep off."""

    purge_expired: bool = True
    archive_retention_days: int | None = 30
    recall_retention_days: int | None = 30
    delivery_retention_days: int | None = 30


class SweepReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sweep: SweepName
    enabled: bool
    purged: int = 0
    retention_days: int | None = None


class MaintenanceReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    owner: str
    at: str
    sweeps: list[SweepReport]
    others: list[str] = Field(
        default_factory=list, description="other owners (users, orgs) that had lessons due"
    )


class Maintenance:
    """Runs the sweeps of a plan, through a service, for the maintaining actor's own tenant
    and for every other owner with something due (acting as that owner, so each erasure is
    audited in the owner's own chain). The maintaining actor needs the admin permission and
    no token confinement."""

    def __init__(self, service: LessonService) -> None:
        self.service = service

    def run(self, plan: SweepPlan, *, principal: str) -> MaintenanceReport:
        """One run of the schedule or of ``lorestore maintain``: the plan's sweeps as the
        store's person ``principal`` (``user:local``, or LORESTORE_USER), marked as
        maintenance (``maintenance_actor``)."""
        return self.maintain(maintenance_actor(principal), plan)

    def maintain(self, actor: Actor, plan: SweepPlan) -> MaintenanceReport:
        self.service._authorise(actor, "admin")
        at = self.service._now()
        due = set(self._due_owners(plan)) | set(self._delivery_owners(plan))
        others = sorted(o for o in due if o != actor.owner)
        for owner in others:
            self._sweep(_acting_for(owner, actor.principal), plan)
        sweeps = self._sweep(actor, plan)
        return MaintenanceReport(owner=actor.owner, at=at, sweeps=sweeps, others=others)

    def _due_owners(self, plan: SweepPlan) -> list[str]:
        now = self.service.clock()
        never = format_ts(now - timedelta(days=365 * 1000))

        def cutoff(days: int | None) -> str:
            return never if days is None else format_ts(now - timedelta(days=days))

        with self.service.store.transaction(write=False) as tx:
            return tx.due_owners(
                format_ts(now) if plan.purge_expired else never,
                cutoff(plan.archive_retention_days),
                cutoff(plan.recall_retention_days),
            )

    def _delivery_owners(self, plan: SweepPlan) -> list[str]:
        if plan.delivery_retention_days is None:
            return []
        cutoff = format_ts(self.service.clock() - timedelta(days=plan.delivery_retention_days))
        with self.service.store.transaction(write=False) as tx:
            return tx.delivery_owners(cutoff)

    def _sweep(self, actor: Actor, plan: SweepPlan) -> list[SweepReport]:
        return [
            self._purge_sweep(actor, "expired", None, enabled=plan.purge_expired),
            self._purge_sweep(
                actor,
                "archived",
                plan.archive_retention_days,
                enabled=plan.archive_retention_days is not None,
            ),
            self._recall_sweep(actor, plan.recall_retention_days),
            self._delivery_sweep(actor, plan.delivery_retention_days),
        ]

    def _purge_sweep(
        self, actor: Actor, sweep: SweepName, days: int | None, *, enabled: bool
    ) -> SweepReport:
        if not enabled:
            return SweepReport(sweep=sweep, enabled=False)
        if days is None:
            result = self.service.memory_purge_expired(actor, NoParams())
        else:
            result = self.service.memory_purge(actor, PurgeParams(retention_days=days))
        report = SweepReport(sweep=sweep, enabled=True, purged=result.purged, retention_days=days)
        with self.service.store.transaction(write=True, actor=actor.principal) as tx:
            self.service._audit(
                tx, actor, f"sweep_{sweep}", None, reason="maintenance", detail=_counts(report)
            )
        return report

    def _recall_sweep(self, actor: Actor, days: int | None) -> SweepReport:
        if days is None:
            return SweepReport(sweep="recall_log", enabled=False)
        cutoff = format_ts(self.service.clock() - timedelta(days=days))
        with self.service.store.transaction(write=True, actor=actor.principal) as tx:
            purged = tx.purge_recall_log(actor.owner, cutoff)
            report = SweepReport(
                sweep="recall_log", enabled=True, purged=purged, retention_days=days
            )
            self.service._audit(
                tx, actor, "sweep_recall_log", None, reason="maintenance", detail=_counts(report)
            )
        return report

    def _delivery_sweep(self, actor: Actor, days: int | None) -> SweepReport:
        """Delivery ids older than the retention: a redelivery after it is applied again
        (as a new value it versions the lesson; the same value only counts a sighting)."""
        if days is None:
            return SweepReport(sweep="webhook_deliveries", enabled=False)
        cutoff = format_ts(self.service.clock() - timedelta(days=days))
        with self.service.store.transaction(write=True, actor=actor.principal) as tx:
            purged = tx.purge_deliveries(actor.owner, cutoff)
            report = SweepReport(
                sweep="webhook_deliveries", enabled=True, purged=purged, retention_days=days
            )
            self.service._audit(
                tx,
                actor,
                "sweep_webhook_deliveries",
                None,
                reason="maintenance",
                detail=_counts(report),
            )
        return report


def maintenance_actor(principal: str) -> Actor:
    """The store's person, marked so that the audit shows the sweeps' events came from
    maintenance (``detail.session``), not from the CLI."""
    return local_actor(principal=principal, session="maintenance", agent="lorestore-maintenance")


def _acting_for(owner: str, by: str) -> Actor:
    """Maintenance acting for one owner (a user or an org) on that owner's own lessons; its
    events in the owner's chain name the principal that ran it (``detail.by``)."""
    return Actor(
        owner, owner, ALL_PERMISSIONS, session="maintenance", agent="maintenance", delegated_by=by
    )


def _counts(report: SweepReport) -> dict[str, int | None]:
    return {"purged": report.purged, "retention_days": report.retention_days}
