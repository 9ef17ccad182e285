"""The Transaction protocol's primitives written once over SQL, for both backends: each runs a
named query of the backend's ``queries.sql`` and turns its rows into records. A backend
subclasses ``SQLTransaction`` with its dialect (``sqlite/dialect.py``, ``postgres/dialect.py``):
the hooks of ``base.py`` and the few primitives that really differ (locks, PostgreSQL's
definer functions, SQLite's bulk import)."""

from lorestore.storage.sql.base import SQLBase, stored
from lorestore.storage.sql.bulk import BulkPrimitives
from lorestore.storage.sql.lessons import LessonPrimitives
from lorestore.storage.sql.tenancy import TenancyPrimitives
from lorestore.storage.sql.vectors import VectorPrimitives
from lorestore.storage.sql.webhooks import WebhookPrimitives


class SQLTransaction(
    LessonPrimitives, TenancyPrimitives, BulkPrimitives, VectorPrimitives, WebhookPrimitives
):
    """Every shared primitive; the backend's subclass adds its dialect."""


__all__ = ["SQLBase", "SQLTransaction", "stored"]
