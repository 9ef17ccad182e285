"""The dashboard's server-side sign-in sessions, kept in the server's memory.

A session is created by signing in with a token, which lorestore's own token authentication
checks; the browser then holds only a random session id in a cookie. The server keeps the
SHA-256 of that id (a copy of the table in a memory dump or a log names no usable session)
with the hash of the token signed in with, never the token itself. Every request checks the
token again through ``LessonService.authenticate_hash``, so revoking or expiring the token
ends its sessions at once. A session ends at sign-out, after ``lifetime``, or when the server
stops (sessions are not written to the store: signing in again is the cost of a restart).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta

# More live sessions than any team needs; past it the oldest sign-in is ended, so a flood of
# sign-ins cannot grow the server's memory without bound.
MAX_SESSIONS = 10_000


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Session:
    """What the server knows of one sign-in."""

    token_hash: str
    csrf: str  # the value every state-changing form of this session carries
    principal: str
    created_at: datetime
    expires_at: datetime


class SessionStore:
    """Live sessions by the digest of their id; thread-safe (pages run in worker threads)."""

    def __init__(self, lifetime: timedelta, *, limit: int = MAX_SESSIONS) -> None:
        self.lifetime = lifetime
        self.limit = limit
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def create(self, token_hash: str, principal: str, now: datetime) -> tuple[str, Session]:
        """A new session; returns the id for the cookie (kept nowhere else) and the session."""
        session_id = secrets.token_urlsafe(32)
        session = Session(
            token_hash=token_hash,
            csrf=secrets.token_urlsafe(32),
            principal=principal,
            created_at=now,
            expires_at=now + self.lifetime,
        )
        with self._lock:
            self._sessions[_digest(session_id)] = session
            while len(self._sessions) > self.limit:
                self._sessions.popitem(last=False)
        return session_id, session

    def get(self, session_id: str, now: datetime) -> Session | None:
        """The live session of this id; an expired one is ended on the way."""
        key = _digest(session_id)
        with self._lock:
            session = self._sessions.get(key)
            if session is not None and session.expires_at <= now:
                del self._sessions[key]
                return None
            return session

    def end(self, session_id: str) -> bool:
        """Sign-out: the session is deleted; False when there was none."""
        with self._lock:
            return self._sessions.pop(_digest(session_id), None) is not None

    def end_token(self, token_hash: str) -> int:
        """End every session signed in with this token (it was refused: revoked, expired)."""
        with self._lock:
            gone = [k for k, s in self._sessions.items() if s.token_hash == token_hash]
            for key in gone:
                del self._sessions[key]
        return len(gone)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)
