"""PostgreSQL rows arrive as SQLite's do (postgres/store.py): jsonb as its JSON text, and a
timestamptz as lorestore's canonical text (``core/timestamps.format_ts``), read from the
server's text in the session's UTC, or through a datetime when the server writes anything
else. Through the store's own pooled connections."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from tests.pg import Template

from lorestore.core.timestamps import format_ts
from lorestore.storage.postgres import PostgresStore

TIMES = [
    "2026-11-30T12:00:00.000000Z",  # no fraction: the server writes none
    "2026-11-30T12:00:00.500000Z",  # the server drops the fraction's trailing zeros
    "2026-11-30T23:59:59.123456Z",
    "0099-01-01T00:00:00.000100Z",  # a year the server pads to four digits
    "9999-12-31T23:59:59.999999Z",
]


@pytest.fixture
def pg(pg_template: Template, pg_database: str) -> Iterator[PostgresStore]:
    store = PostgresStore(pg_template.app_url(pg_database), max_size=1, semantic=False)
    yield store
    store.close()


def test_times_arrive_as_their_canonical_text(pg: PostgresStore) -> None:
    with pg._pool.connection() as conn:
        for text in TIMES:
            row = conn.execute("SELECT %s::timestamptz AS t", [text]).fetchone()
            assert row == {"t": text}
        # The control: the same instant the server writes in another zone's offset is read
        # through a datetime, to the same text.
        with conn.transaction():
            conn.execute("SET LOCAL TIME ZONE 'Asia/Kolkata'")
            row = conn.execute("SELECT %s::timestamptz AS t", [TIMES[2]]).fetchone()
            assert row == {"t": TIMES[2]}
        now = datetime.now(UTC)
        row = conn.execute("SELECT %s::timestamptz AS t, '{\"a\": 1}'::jsonb AS j", [now])
        assert row.fetchone() == {"t": format_ts(now), "j": '{"a": 1}'}
