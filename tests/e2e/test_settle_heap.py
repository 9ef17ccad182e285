"""The long-running servers leave start-up's objects out of the collections each call's garbage
triggers (transports.settle_heap, called by `lorestore serve` and `lorestore mcp` once
started): what was alive is frozen, what was garbage is gone."""

from __future__ import annotations

import gc

from lorestore.transports import settle_heap


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_settle_heap_frees_garbage_and_freezes_the_rest() -> None:
    gc.unfreeze()
    kept = Cycle()
    Cycle()  # a cycle no one holds: garbage only a collection frees
    try:
        settle_heap()
        assert gc.get_freeze_count() > 0
        assert gc.get_count()[0] < 50  # the collection just ran
        frozen = gc.get_freeze_count()
        gc.unfreeze()
        assert not any(type(o) is Cycle and o is not kept for o in gc.get_objects())
        assert any(o is kept for o in gc.get_objects())  # the positive control
        assert frozen > 1000  # the interpreter's and the test run's own objects
    finally:
        gc.unfreeze()
