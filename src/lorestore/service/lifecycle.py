"""Archive, restore, hard delete and the two purge sweeps."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from lorestore.auth.actor import Actor
from lorestore.core.errors import LorestoreError
from lorestore.core.normalise import value_digests
from lorestore.core.owner import Owner
from lorestore.core.scope import parse_scope
from lorestore.core.timestamps import format_ts
from lorestore.models import (
    ChangeParams,
    DeleteParams,
    DeleteResult,
    LessonResult,
    NoParams,
    PurgeParams,
    PurgeResult,
)
from lorestore.service.base import ServiceBase, address, bounded
from lorestore.service.corrections import check_tombstone
from lorestore.service.writes import CURATED
from lorestore.storage.protocol import StoredLesson, Transaction

PURGE_BATCH = 500


class LifecycleOperations(ServiceBase):
    def memory_archive(self, actor: Actor, p: ChangeParams) -> LessonResult:
        return self._set_status(actor, p, "archived")

    def memory_restore(self, actor: Actor, p: ChangeParams) -> LessonResult:
        return self._set_status(actor, p, "active")

    def _set_status(self, actor: Actor, p: ChangeParams, status: str) -> LessonResult:
        scope, key = address(p.scope, p.key)
        self._authorise(actor, "write", scope)
        now = self._now()
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            owner = self._owner_for(tx, actor, scope, write=True)
            if status == "active":  # a restore checks tombstones: ordered against rejections
                tx.lock_corrections(owner, exclusive=False)
            stored = self._existing(tx, owner, scope, key)
            if stored.lesson.status == status:
                return LessonResult(lesson=stored.lesson)
            self._check_curated_status(actor, stored, status)
            if status == "active" and stored.lesson.trust != "rejected":
                # A value rejected while this copy was archived must not come back with it.
                check_tombstone(tx, owner, parse_scope(scope), value_digests(stored.lesson.value))
            updated = stored.lesson.model_copy(
                update={
                    "status": status,
                    "updated_at": now,
                    "archived_at": now if status == "archived" else None,
                }
            )
            tx.save_lesson(stored.pk, updated, stored.value_digest, stored.pending_version)
            version = (updated.version, stored.value_digest)
            self._audit(
                tx,
                actor,
                "archive" if status == "archived" else "restore",
                updated,
                before=version,
                after=version,
                reason=p.reason,
            )
        return LessonResult(lesson=updated)

    @staticmethod
    def _check_curated_status(actor: Actor, stored: StoredLesson, status: str) -> None:
        """A verified or disputed lesson is archived and restored by a reviewer, as it is
        changed, relabelled or set to expire by one: the purge sweep erases what stays
        archived, a delete an agent may not make; and a curated lesson a reviewer put away
        is not for a write token to bring back into recall."""
        trust = stored.lesson.trust
        if trust not in CURATED or actor.can("review"):
            return
        if status == "archived":
            raise LorestoreError(
                "forbidden",
                f"archiving a {trust} lesson is a reviewer's call (the purge sweep erases "
                "archived lessons after the retention days)",
                hint=(
                    "dispute it with a reason if it is wrong: `lorestore dispute SCOPE KEY "
                    "--reason ...`; a reviewer then verifies or rejects it"
                    if trust == "verified"
                    else "it is disputed already: a reviewer verifies or rejects it"
                ),
                details={"trust": trust},
            )
        raise LorestoreError(
            "forbidden",
            f"restoring a {trust} lesson is a reviewer's call, as archiving it is",
            hint="ask a reviewer to restore it (`lorestore restore SCOPE KEY` with the review "
            "permission), or write a new lesson under another key",
            details={"trust": trust},
        )

    def memory_delete(self, actor: Actor, p: DeleteParams) -> DeleteResult:
        scope, key = address(p.scope, p.key)
        self._authorise(actor, "admin", scope)
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            owner = self._owner_for(tx, actor, scope, write=True)
            if Owner.parse(owner).is_org:  # erasing team knowledge, as purging it, is for admins
                role = self._role(tx, actor, owner)
                if role not in ("owner", "admin"):
                    raise LorestoreError(
                        "forbidden",
                        f"a hard delete in {owner} needs its owner or admin role; you are {role}",
                        hint="archive the lesson instead (it can be restored), or ask an admin",
                        details={"org": owner, "role": role},
                    )
            stored = self._existing(tx, owner, scope, key)
            erased = self._erase(tx, actor, stored, "delete", p.reason)
            tx.compact_search_index()
        self.store.flush_erased()
        return DeleteResult(
            deleted=True, lesson_id=stored.lesson.id, scope=scope, key=key, versions_erased=erased
        )

    def memory_purge(self, actor: Actor, p: PurgeParams) -> PurgeResult:
        self._authorise(actor, "admin")
        days = bounded("retention_days", p.retention_days, 0, 3650)
        cutoff = format_ts(self.clock() - timedelta(days=days))
        return self._sweep(
            actor,
            lambda tx: [
                row
                for owner in self._readable_owners(tx, actor, admin=True)
                for row in tx.archived_before(owner, cutoff, PURGE_BATCH)
            ][:PURGE_BATCH],
            "purge",
            f"archived more than {days} days",
        )

    def memory_purge_expired(self, actor: Actor, p: NoParams) -> PurgeResult:
        self._authorise(actor, "admin")
        now = self._now()
        return self._sweep(
            actor,
            lambda tx: [
                row
                for owner in self._readable_owners(tx, actor, admin=True)
                for row in tx.expired_before(owner, now, PURGE_BATCH)
            ][:PURGE_BATCH],
            "purge_expired",
            "expired",
        )

    def _sweep(
        self,
        actor: Actor,
        batch: Callable[[Transaction], list[StoredLesson]],
        action: str,
        reason: str,
    ) -> PurgeResult:
        ids: list[str] = []
        while True:
            with self.store.transaction(write=True, actor=actor.principal) as tx:
                rows = batch(tx)
                for stored in rows:
                    self._erase(tx, actor, stored, action, reason)
                    ids.append(stored.lesson.id)
                if rows:
                    tx.compact_search_index()
            if len(rows) < PURGE_BATCH:
                if ids:
                    self.store.flush_erased()
                return PurgeResult(purged=len(ids), lesson_ids=ids)

    def _erase(
        self, tx: Transaction, actor: Actor, stored: StoredLesson, action: str, reason: str | None
    ) -> int:
        """Erase a lesson and every version; the audit keeps only the versions' digests."""
        versions = tx.versions(stored.pk, stored.lesson.id)
        tx.delete_lesson(stored.pk)
        self._audit(
            tx,
            actor,
            action,
            stored.lesson,
            before=(stored.lesson.version, stored.value_digest),
            reason=reason,
            detail={
                "versions_erased": len(versions),
                "version_digests": [v.value_digest for v in versions],
            },
        )
        return len(versions)
