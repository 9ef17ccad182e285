"""Who is calling: the principal, the owner their writes land on, and their permissions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Permission = Literal["read", "write", "review", "admin"]
ALL_PERMISSIONS: frozenset[Permission] = frozenset({"read", "write", "review", "admin"})


@dataclass(frozen=True, slots=True)
class Actor:
    """The caller of one operation.

    ``principal`` is who acts ('user:local'); ``owner`` is the tenant whose lessons they
    read and write; ``session`` identifies the agent session for recurrence counting.
    """

    principal: str
    owner: str
    permissions: frozenset[Permission] = field(default=ALL_PERMISSIONS)
    session: str | None = None
    agent: str | None = None
    is_person: bool = True
    scopes: tuple[str, ...] | None = None  # a token's scope patterns; None: unrestricted
    orgs: tuple[str, ...] | None = None  # a token's orgs ('org:slug'); None: unrestricted
    token_id: str | None = None
    token_expires_at: str | None = None  # a token's own expiry: the tokens it makes end by then
    # Who runs an operation in this actor's name (maintenance sweeping another owner's
    # lessons as that owner): the audit records them beside the owner.
    delegated_by: str | None = None

    def can(self, permission: Permission) -> bool:
        return permission in self.permissions or "admin" in self.permissions


AGENT_PERMISSIONS: frozenset[Permission] = frozenset({"read", "write"})


def local_actor(
    *, principal: str = "user:local", session: str | None = None, agent: str | None = None
) -> Actor:
    """A person at the command line of their own store: every permission, no token needed.
    On the embedded store that is ``user:local``; on PostgreSQL, ``LORESTORE_USER``."""
    return Actor(principal, principal, ALL_PERMISSIONS, session=session, agent=agent)


def local_agent(*, principal: str = "user:local", session: str, agent: str | None = None) -> Actor:
    """An agent working for the local user through the MCP server: it reads and writes the
    user's lessons but cannot review them (no self-approval) or erase them."""
    return Actor(
        principal, principal, AGENT_PERMISSIONS, session=session, agent=agent, is_person=False
    )
