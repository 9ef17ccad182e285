"""The team backend: PostgreSQL with forced row-level security, via psycopg 3 and a pool."""

from lorestore.storage.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
