"""Maps PostgreSQL errors that carry a meaning for the caller to lorestore's error codes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import errors as pg_errors

from lorestore.core.errors import LorestoreError, cap_exceeded

CAP_EXCEEDED = "LS001"  # the cap on active lessons (migration bound_owner_caps)
# A scope binding the database refused (migration check_binding_claims): it shares scopes with
# another org's binding (met by a binding made at the same moment), or names no owner.
BINDING_OVERLAP, BINDING_UNCLAIMED = "LS002", "LS003"
BYTES_CAP_EXCEEDED = "LS005"  # the cap on stored bytes (LS004: a binding awaiting approval)
CAPS = {CAP_EXCEEDED: "active_lessons", BYTES_CAP_EXCEEDED: "stored_bytes"}


@contextmanager
def translate() -> Iterator[None]:
    """Re-raise database refusals (caps, row-level security) as LorestoreError."""
    try:
        yield
    except pg_errors.InsufficientPrivilege as exc:
        raise LorestoreError(
            "forbidden",
            "the database refused this change for this actor (row-level security)",
            hint="you may read this tenant's lessons but not write them",
        ) from exc
    except (pg_errors.DeadlockDetected, pg_errors.SerializationFailure) as exc:
        raise LorestoreError(
            "busy",
            "the transaction met another one writing the same rows and was rolled back",
            hint="retry: nothing of this request was written",
            details={"error": exc.sqlstate},
        ) from exc
    except pg_errors.UniqueViolation as exc:
        if exc.diag.constraint_name != "lessons_address":
            raise
        raise LorestoreError(
            "conflict",
            "another write created a lesson at this address at the same moment",
            hint="retry: the address is taken now, and the retry meets that lesson",
            details={"constraint": "lessons_address"},
        ) from exc
    except psycopg.Error as exc:
        if exc.sqlstate in (BINDING_OVERLAP, BINDING_UNCLAIMED):
            raise LorestoreError(
                "conflict" if exc.sqlstate == BINDING_OVERLAP else "invalid_scope",
                exc.diag.message_primary or "the database refused this scope binding",
                hint="bind a pattern under a name the org stands for that shares no scope "
                "with another org's binding",
            ) from exc
        if exc.sqlstate in CAPS:
            message = exc.diag.message_primary or "cap exceeded"
            raise cap_exceeded(CAPS[exc.sqlstate], message.removeprefix("cap_exceeded: ")) from exc
        raise
