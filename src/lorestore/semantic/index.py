"""Stored vectors in and out, and the in-process index recall searches: each rung's vectors
(owner, scope) kept as one float32 matrix, brought up to date on each recall by reading only
the vectors written since the last read (their generation), so a recall at 100k lessons pays
one matrix product, not a read of every vector."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lorestore.semantic.model import DIMENSIONS, Availability, Embedder, availability

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

LOG = logging.getLogger("lorestore.semantic")

# A stored component is int8: the unit vector times 127, rounded (256 bytes a lesson; the
# cosine it gives differs from float32's by well under 0.01).
SCALE = 127.0
# A rung larger than EXACT_UP_TO lessons is searched in two steps: the first COARSE
# components of every vector, then the whole vectors of the SHORTLIST x limit best.
COARSE = 64
EXACT_UP_TO = 4096
SHORTLIST = 8


def pack(vectors: NDArray[np.float32]) -> list[bytes]:
    """Unit vectors as the bytes the store keeps, one per row."""
    import numpy as np

    quantised = np.clip(np.rint(vectors * SCALE), -127, 127).astype(np.int8)
    return [row.tobytes() for row in quantised]


def unpack(blobs: Sequence[bytes]) -> NDArray[np.float32]:
    """Stored bytes back to unit vectors (rows renormalised after the rounding)."""
    import numpy as np

    if not blobs:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    raw = np.frombuffer(b"".join(bytes(b) for b in blobs), dtype=np.int8)
    matrix = raw.reshape(len(blobs), DIMENSIONS).astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: NDArray[np.float32] = matrix / norms
    return unit


def _prefix(vectors: NDArray[np.float32]) -> NDArray[np.float32]:
    """The first COARSE components of each row, renormalised: the model is trained so that a
    prefix of its vector is a vector of its own (Matryoshka), so these rank nearly as the
    whole does, at a quarter of the memory read."""
    import numpy as np

    head = np.ascontiguousarray(vectors[:, :COARSE])
    norms = np.linalg.norm(head, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: NDArray[np.float32] = head / norms
    return unit


def _scores(matrix: NDArray[np.float32], query: NDArray[np.float32]) -> NDArray[np.float32]:
    """matrix @ query without BLAS: OpenBLAS spreads a product this size over threads, which
    on a shared machine wait for a core (a 56k-row product: 8 ms at the median, 3 with einsum
    on one thread; benchmarks/semantic_bench.py)."""
    import numpy as np

    found: NDArray[np.float32] = np.einsum("ij,j->i", matrix, query)
    return found


def _best(scores: NDArray[np.float32], limit: int) -> NDArray[np.intp]:
    import numpy as np

    if len(scores) <= limit:
        return np.arange(len(scores))
    return np.argpartition(-scores, limit - 1)[:limit]


@dataclass
class _Rung:
    """One rung's vectors: row i of ``matrix`` (and of ``coarse``, its prefixes) is lesson
    ``ids[i]``; ``since`` is the first generation not read yet."""

    ids: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    matrix: NDArray[np.float32] | None = None
    coarse: NDArray[np.float32] | None = None
    since: int = 0

    def update(self, ids: Sequence[str], vectors: NDArray[np.float32]) -> None:
        import numpy as np

        prefixes = _prefix(vectors)
        fresh = []
        for n, lesson_id in enumerate(ids):
            row = self.rows.get(lesson_id)
            if row is None:
                fresh.append(n)
                continue
            assert self.matrix is not None and self.coarse is not None
            self.matrix[row] = vectors[n]  # a new version of a lesson already here
            self.coarse[row] = prefixes[n]
        if not fresh:
            return
        start = len(self.ids)
        for n in fresh:
            self.rows[ids[n]] = len(self.ids)
            self.ids.append(ids[n])
        needed = len(self.ids)
        if self.matrix is None or self.coarse is None or self.matrix.shape[0] < needed:
            # Grown by half again each time, so a rung filled one lesson at a time copies
            # its matrix a logarithmic number of times.
            rows = max(needed, needed * 3 // 2, 64)
            grown = np.zeros((rows, DIMENSIONS), dtype=np.float32)
            grown_coarse = np.zeros((rows, COARSE), dtype=np.float32)
            if self.matrix is not None and self.coarse is not None:
                grown[:start] = self.matrix[:start]
                grown_coarse[:start] = self.coarse[:start]
            self.matrix, self.coarse = grown, grown_coarse
        self.matrix[start:needed] = vectors[fresh]
        self.coarse[start:needed] = prefixes[fresh]

    def nearest(
        self, n: int, query: NDArray[np.float32], coarse_query: NDArray[np.float32], limit: int
    ) -> list[tuple[float, str]]:
        """The ``limit`` nearest of the first ``n`` rows: a large rung is first narrowed by its
        prefixes to SHORTLIST times ``limit`` rows, which the whole vectors then rank."""
        assert self.matrix is not None and self.coarse is not None
        if n <= EXACT_UP_TO:
            rows = _best(_scores(self.matrix[:n], query), limit)
        else:
            shortlist = _best(_scores(self.coarse[:n], coarse_query), SHORTLIST * limit)
            exact = _scores(self.matrix[shortlist], query)
            rows = shortlist[_best(exact, limit)]
        sims = _scores(self.matrix[rows], query)
        return [(float(sim), self.ids[row]) for sim, row in zip(sims, rows, strict=True)]


class VectorIndex:
    """Every rung a process has recalled from, by (owner, scope). Rows come from the store
    under the caller's row-level security; a rung is only ever asked for by a recall whose
    actor may read it (the service resolves each rung's owner first), and the candidates it
    names are read again from the store, under the same rules, before recall weighs them."""

    def __init__(self) -> None:
        self._rungs: dict[tuple[str, str], _Rung] = {}
        self._lock = threading.Lock()

    def since(self, address: tuple[str, str]) -> int:
        rung = self._rungs.get(address)
        return 0 if rung is None else rung.since

    def update(
        self, address: tuple[str, str], rows: Iterable[tuple[str, bytes]], mark: int
    ) -> None:
        """Add or replace the rung's vectors read at ``since``; ``mark`` is read next."""
        found = list(rows)
        with self._lock:
            rung = self._rungs.setdefault(address, _Rung())
            if found:
                rung.update([lesson_id for lesson_id, _ in found], unpack([v for _, v in found]))
            rung.since = max(rung.since, mark)

    def nearest(
        self, addresses: Sequence[tuple[str, str]], query: NDArray[np.float32], limit: int
    ) -> dict[str, float]:
        """The ``limit`` lessons of these rungs most similar to ``query`` (a unit vector), by
        id, with their cosine similarity."""

        scored: list[tuple[float, str]] = []
        coarse_query = _prefix(query.reshape(1, -1))[0]
        with self._lock:  # a server's threads recall and update at once
            for address in addresses:
                rung = self._rungs.get(address)
                if rung is not None and rung.ids:
                    scored += rung.nearest(len(rung.ids), query, coarse_query, limit)
        scored.sort(reverse=True)
        return {lesson_id: sim for sim, lesson_id in scored[:limit]}

    def similarity(
        self, addresses: Sequence[tuple[str, str]], query: NDArray[np.float32], ids: Iterable[str]
    ) -> dict[str, float]:
        """The cosine similarity to ``query`` of those of ``ids`` that have a vector here."""
        wanted = list(ids)  # a few hundred; a rung may hold tens of thousands
        found: dict[str, float] = {}
        with self._lock:
            for address in addresses:
                rung = self._rungs.get(address)
                if rung is None or rung.matrix is None:
                    continue
                here = [(i, rung.rows[i]) for i in wanted if i in rung.rows]
                if here:
                    sims = _scores(rung.matrix[[row for _, row in here]], query)
                    found.update(zip([i for i, _ in here], sims.tolist(), strict=True))
        return found


class Vectors:
    """What a store holds for hybrid retrieval: the model (loaded on first use) and the index
    of the rungs recalled in this process. None on a store where the extra is missing or
    switched off (LORESTORE_SEMANTIC=off)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.index = VectorIndex()
        # Why the model could not be loaded, once it failed: the process then runs lexically
        # (writes keep no vector; `lorestore reindex` adds them later) rather than refuse
        # every write and recall over a third-party package.
        self.broken: str | None = None
        self._ready = False

    def ready(self) -> bool:
        """Load the model if it is not yet (once per process); False if it cannot be."""
        if not self._ready and self.broken is None:
            try:
                self.embedder.embed(["lorestore"])
                self._ready = True
            except Exception as exc:  # whatever a third-party model's load raises
                self.broken = f"the semantic model did not load ({type(exc).__name__}: {exc})"
                LOG.warning("%s: retrieval is lexical in this process", self.broken)
        return self._ready

    @property
    def model(self) -> str:
        return self.embedder.name

    @property
    def version(self) -> str:
        return self.embedder.version

    @classmethod
    def open(cls, enabled: bool = True) -> Vectors | None:
        state: Availability = availability(enabled)
        return cls(Embedder()) if state.installed else None
