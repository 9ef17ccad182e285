"""The shared primitives of hybrid retrieval: a lesson's vector kept on every write of its
row (create, new version, accepted revision, import), the semantic pass of recall over the
ladder's rungs, and the pages `lorestore reindex` embeds. Without the extra (``_vectors`` is
None) each is a no-op and recall stays lexical."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from lorestore.storage.protocol import ImportedLesson, RecallRow
from lorestore.storage.recall_rows import recall_rows
from lorestore.storage.rows import json_field
from lorestore.storage.sql.base import SQLBase

if TYPE_CHECKING:
    from lorestore.core.records import Lesson

if TYPE_CHECKING:
    from lorestore.semantic.index import Vectors


class VectorPrimitives(SQLBase):
    """Vectors over the dialect; the store sets ``_vectors`` on each transaction it opens."""

    _vectors: Vectors | None = None

    def retrieval_model(self) -> str | None:
        """The embedding model recall fuses with the full-text rank (name@version), or None
        when recall is lexical only (the extra missing, switched off, or its model failed to
        load in this process)."""
        v = self._vectors
        return None if v is None or v.broken else f"{v.model}@{v.version}"

    def retrieval_problem(self) -> str | None:
        """Why retrieval is lexical although the extra is on: its model failed to load."""
        v = self._vectors
        return None if v is None else v.broken

    def _embed(self, lessons: Sequence[tuple[int, Lesson]]) -> None:
        """Keep the vector of each (pk, lesson): its tags and served text."""
        v = self._vectors
        if v is None or not lessons or not v.ready():
            return
        from lorestore.semantic.model import embedding_text

        self._put_vectors(
            v,
            [(lesson.owner.key, pk, lesson.id, lesson.scope) for pk, lesson in lessons],
            [embedding_text(lesson.tags, lesson.value) for _, lesson in lessons],
        )

    def _embed_imported(self, lessons: Sequence[ImportedLesson], pks: Sequence[int | None]) -> None:
        """Keep the vector of each imported lesson that landed (pk not None), at its owner."""
        v = self._vectors
        if v is None or not v.ready():
            return
        from lorestore.semantic.model import embedding_text

        landed = [(i, pk) for i, pk in zip(lessons, pks, strict=True) if pk is not None]
        if landed:
            self._put_vectors(
                v,
                [(i.owner, pk, i.id, i.lesson.scope) for i, pk in landed],
                [embedding_text(i.lesson.tags, i.lesson.value) for i, _ in landed],
            )

    def _put_vectors(
        self, v: Vectors, targets: Sequence[tuple[str, int, str, str]], texts: list[str]
    ) -> None:
        """Embed ``texts`` and keep each vector for its (owner, lesson pk, lesson id, scope)."""
        from lorestore.semantic.index import pack

        blobs = pack(v.embedder.embed(texts))
        self._executemany(
            "put_vector",
            (
                {
                    "owner": owner,
                    "lesson_pk": pk,
                    "lesson_id": lesson_id,
                    "scope": scope,
                    "model": v.model,
                    "model_version": v.version,
                    "vector": blob,
                }
                for (owner, pk, lesson_id, scope), blob in zip(targets, blobs, strict=True)
            ),
        )

    def semantic_candidates(
        self,
        addresses: Sequence[tuple[str, str]],
        task: str | None,
        *,
        known: Collection[str],
        limit: int,
    ) -> tuple[list[RecallRow], dict[str, float]]:
        """Recall's semantic pass: the ``limit`` lessons of the rungs nearest the task that
        are not among ``known`` (the lexical pass's candidates), as recall rows read under the
        same conditions; and the cosine similarity of every lesson weighed, known ones
        included, by id. Empty without the extra or a task."""
        v = self._vectors
        if v is None or not task or not task.strip() or not addresses or not v.ready():
            return [], {}
        query = v.embedder.embed([task])[0]
        mark = int(self._one("vector_mark", {})["mark"])
        for owner, scope in addresses:
            params = {
                "owner": owner,
                "scope": scope,
                "since": v.index.since((owner, scope)),
                "model": v.model,
                "model_version": v.version,
            }
            rows = self._all("rung_vectors", params)
            v.index.update((owner, scope), ((str(r["id"]), r["vector"]) for r in rows), mark)
        nearest = v.index.nearest(addresses, query, limit)
        similarity = v.index.similarity(addresses, query, known) | nearest
        fresh = [lesson_id for lesson_id in nearest if lesson_id not in known]
        if not fresh:
            return [], similarity
        owners = sorted({owner for owner, _ in addresses})
        by_ids: dict[str, Any] = {"ids": self._array(fresh), "owners": self._array(owners)}
        ladder = set(addresses)
        found = [
            row
            for row in recall_rows(self._all("recall_by_ids", by_ids))
            if (row.owner, row.head.scope) in ladder
        ]
        return found, similarity

    # `lorestore reindex`.

    def count_lessons_to_embed(self) -> int:
        v = self._vectors
        if v is None:
            return 0
        row = self._one("count_lessons_to_embed", {"model": v.model, "model_version": v.version})
        return int(row["n"])

    def embed_page(self, after: int, limit: int) -> tuple[int, int]:
        """Embed up to ``limit`` lessons after pk ``after`` that lack this model's vector;
        how many, and the last pk seen (0 and ``after`` when none is left)."""
        v = self._vectors
        if v is None or not v.ready():
            return 0, after
        params = {"after": after, "limit": limit, "model": v.model, "model_version": v.version}
        rows = self._all("lessons_to_embed", params)
        if not rows:
            return 0, after
        from lorestore.semantic.model import embedding_text

        self._put_vectors(
            v,
            [(r["owner"], int(r["pk"]), str(r["id"]), r["scope"]) for r in rows],
            [embedding_text(json_field(r["tags"], []), r["value"]) for r in rows],
        )
        return len(rows), int(rows[-1]["pk"])
