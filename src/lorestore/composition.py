"""The composition root: turns Settings (or a database URL) into a store, a service and a
maintenance plan for an entry point. Nothing outside ``storage/`` opens a store otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lorestore.config import Settings, sqlite_path
from lorestore.core.errors import LorestoreError
from lorestore.storage.protocol import Store

if TYPE_CHECKING:  # each loaded by the builder that needs it: a hook loads recall alone
    from lorestore.service import LessonService
    from lorestore.service.maintenance import SweepPlan
    from lorestore.service.recaller import Recaller

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_store(settings: Settings) -> Store:
    """The backend named by LORESTORE_DATABASE_URL: PostgreSQL (as the app role) or SQLite.
    It serves operations (serve, the CLI's commands, the MCP server, maintenance), so a
    PostgreSQL role that bypasses row-level security is refused."""
    store = open_database(settings.database_url, semantic=settings.semantic)
    bypass = rls_bypass(store)
    if bypass is not None:
        store.close()
        raise LorestoreError(
            "config_error",
            bypass,
            hint="connect as the application role: the URL `lorestore db init` printed "
            "(user lorestore_app) in LORESTORE_DATABASE_URL",
        )
    return store


def rls_bypass(store: Store) -> str | None:
    """What is wrong when ``store`` is PostgreSQL reached as a superuser or a BYPASSRLS role:
    row-level security then filters nothing. None for SQLite and for a role the policies
    bind. Administration commands that need such a role (``db cap``) show it as a warning."""
    # Only PostgresStore has the check; asked by name, so SQLite never imports the driver.
    check = getattr(store, "role_bypassing_rls", None)
    role = check() if check is not None else None
    if role is None:
        return None
    return (
        f"PostgreSQL role {role!r} bypasses row-level security (a superuser or BYPASSRLS): "
        "every tenant's lessons would reach every caller"
    )


def open_database(url: str, *, pool_size: int | None = None, semantic: bool = True) -> Store:
    """The store at ``url``, without the rest of the settings: PostgreSQL as the role the URL
    names (with at most ``pool_size`` connections; the store's default when None), or the
    SQLite file of ``sqlite:///PATH`` (created and migrated when new). ``semantic``: hybrid
    retrieval when the extra is installed (LORESTORE_SEMANTIC)."""
    if url.startswith(POSTGRES_SCHEMES):
        from lorestore.storage.postgres import PostgresStore

        if pool_size is None:
            return PostgresStore(url, semantic=semantic)
        return PostgresStore(url, max_size=pool_size, semantic=semantic)
    from lorestore.storage.sqlite import SQLiteStore

    return SQLiteStore(sqlite_path(url), semantic=semantic)


def build_service(
    settings: Settings, *, local_files: bool = False, store: Store | None = None
) -> LessonService:
    """The service for an entry point, on ``store`` if it is open already. ``local_files``:
    the caller runs where the agent's working directory is (the CLI, the stdio MCP server),
    so recall may hash depends_on files with git there; a server never reads its own disk on
    a client's behalf."""
    from lorestore.service import LessonService

    store = open_store(settings) if store is None else store
    return LessonService(store, **_service_options(settings, local_files))


def build_recall(settings: Settings, *, local_files: bool = False) -> Recaller:
    """Recall alone, for an entry point that does nothing else (a host's hook, a cold process
    per event): the same store and the same recall as build_service's, without the other
    operations or the pydantic models of their arguments. ``local_files`` as there."""
    from lorestore.service.recaller import Recaller

    return Recaller(open_store(settings), **_service_options(settings, local_files))


def _service_options(settings: Settings, local_files: bool) -> dict[str, Any]:
    blob_lookup = None
    if local_files:
        from lorestore.gitinfo import blob_hashes

        blob_lookup = blob_hashes
    return {
        "corroborate_at": settings.corroborate_at,
        "rate_limit": settings.rate_limit,
        "blob_lookup": blob_lookup,
        "webhooks": settings.webhooks,
    }


def sweep_plan(settings: Settings) -> SweepPlan:
    """The maintenance sweeps LORESTORE_PURGE_EXPIRED and the retentions switch on."""
    from lorestore.service.maintenance import SweepPlan

    return SweepPlan(
        purge_expired=settings.purge_expired,
        archive_retention_days=settings.archive_retention_days,
        recall_retention_days=settings.recall_retention_days,
        delivery_retention_days=settings.webhooks.retention_days,
    )
