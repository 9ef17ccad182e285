"""The worker threads a server runs its service calls in. Every request's call is handed to
anyio's default thread limiter, sized at start to what the store serves best
(``Store.concurrent_calls``: two on SQLite, whose calls hold the GIL; the pool's connections
on PostgreSQL). Calls that may take seconds or minutes (an import reading its body from the
network, a catalog operation marked ``long_running``) take their own limiter instead, so they
never hold every turn of the short requests (the maintenance sweeps run in a thread of their
own: transports/http/scheduler.py)."""

from __future__ import annotations

from anyio import CapacityLimiter
from anyio.lowlevel import RunVar
from anyio.to_thread import current_default_thread_limiter

from lorestore.storage.protocol import Store

# Long calls at once; more wait for a turn among themselves.
LONG_CALLS = 2

_long: RunVar[CapacityLimiter] = RunVar("lorestore_long_calls")


def size_worker_threads(store: Store) -> None:
    """In the server's event loop, at start: the short calls' limiter sized for ``store``."""
    current_default_thread_limiter().total_tokens = store.concurrent_calls


def limiter_for(long_running: bool) -> CapacityLimiter | None:
    """The limiter a call takes: the long calls' one, or None for the default."""
    return long_calls() if long_running else None


def long_calls() -> CapacityLimiter:
    """The limiter of long calls, one per event loop."""
    try:
        return _long.get()
    except LookupError:
        limiter = CapacityLimiter(LONG_CALLS)
        _long.set(limiter)
        return limiter
