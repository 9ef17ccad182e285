"""memory_activity: what happened per day, counted in the store (the dashboard's chart):
writes and reviews from the audit log, recalls and the lessons they held from the recall log."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

from lorestore.auth.actor import Actor
from lorestore.core.timestamps import format_ts
from lorestore.models import ActivityParams, ActivityResult, DayActivity
from lorestore.service.base import ServiceBase, bounded

WRITE_ACTIONS = frozenset({"write.created", "write.updated", "write.proposed", "write.seen"})
REVIEW_ACTIONS = frozenset({"verify", "verify.revision", "reject", "reject.revision"})


class ActivityOperations(ServiceBase):
    def memory_activity(self, actor: Actor, p: ActivityParams) -> ActivityResult:
        # Every scope of every owner the actor reads: a scope-confined token is refused, as
        # for an audit listing without a scope.
        self._authorise(actor, "read")
        days = bounded("days", p.days, 1, 90)
        today = self.clock().replace(hour=0, minute=0, second=0, microsecond=0)
        first = today - timedelta(days=days - 1)
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            audit, recalls = tx.activity(self._readable_owners(tx, actor), format_ts(first))
        writes: Counter[str] = Counter()
        reviews: Counter[str] = Counter()
        for day, action, n in audit:
            if action in WRITE_ACTIONS:
                writes[day] += n
            elif action in REVIEW_ACTIONS:
                reviews[day] += n
        recalled = {day: (count, held) for day, count, held in recalls}
        result = []
        for offset in range(days):
            day = format_ts(first + timedelta(days=offset))[:10]
            count, held = recalled.get(day, (0, 0))
            result.append(
                DayActivity(
                    day=day, writes=writes[day], reviews=reviews[day], recalls=count, held=held
                )
            )
        return ActivityResult(days=result)
