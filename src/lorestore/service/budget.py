"""A token's per-minute request budget, taken from the store in leases.

The store keeps one counter per token and minute (``count_request``), so that a limit holds
across every process serving the same store (several ``lorestore serve`` on one SQLite file,
or on one PostgreSQL database). Counting each request there was a write transaction per
request: on SQLite every request, reads included, queued for the one writer. Instead a process
reserves a lease of up to ``LEASE_MAX`` requests at once in that counter (one write) and spends
it in memory; when it is spent, or the minute ends, it reserves again.

What that changes, and what it does not:

- The limit is never exceeded: a reservation that passes the limit is granted only the slots
  under it, and a lease never outlives its minute. One process serving a token gets exactly
  ``limit`` requests a minute, the request after them refused as before.
- Across processes a token may be refused a little early: a lease reserved by one process and
  not spent by the end of the minute was counted against the token. With ``P`` processes
  serving one token, it gets at least ``limit - (P - 1) * (lease - 1)`` requests a minute.
- A lease is ``limit // LEASE_SHARE`` requests, at most ``LEASE_MAX`` (30 for the default
  600): a limit under ``2 * LEASE_SHARE`` is counted request by request, as before.
- The store fails closed at every reservation: when the counter cannot be written the
  request is refused; requests already granted by a lease are not taken back.
"""

from __future__ import annotations

import threading

LEASE_MAX = 32
LEASE_SHARE = 20  # a lease is at most a twentieth of the limit


def lease_size(limit: int) -> int:
    """The requests reserved at once under a per-minute ``limit``."""
    return max(1, min(LEASE_MAX, limit // LEASE_SHARE))


def granted(reserved: int, total: int, limit: int) -> int:
    """How many of the ``reserved`` slots that brought the counter to ``total`` are within
    ``limit`` (the slots numbered ``total - reserved + 1`` to ``total``)."""
    return max(0, min(reserved, limit - (total - reserved)))


class Leases:
    """The requests this process holds in reserve, per token, for the current minute."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, tuple[str, int]] = {}  # token id -> (window, requests left)

    def take(self, token_id: str, window: str) -> bool:
        """Spend one request of the token's lease for ``window``; False when none is left."""
        with self._lock:
            held = self._held.get(token_id)
            if held is None or held[0] != window or held[1] <= 0:
                return False
            self._held[token_id] = (window, held[1] - 1)
            return True

    def keep(self, token_id: str, window: str, left: int) -> None:
        """Hold ``left`` requests for the token in ``window`` (leases of past minutes go)."""
        with self._lock:
            stale = [k for k, (w, _) in self._held.items() if w != window]
            for key in stale:
                del self._held[key]
            self._held[token_id] = (window, left)
