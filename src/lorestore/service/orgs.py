"""Organisations: create, list, members and scope bindings (invites: service/invites.py).

Every membership change is checked here against the actor's role in the org and its
rank (only an owner invites or removes an owner; the last owner stays). On PostgreSQL the
row-level policies confine membership changes to orgs the actor administers, and definer
functions create orgs, accept invites and check a binding's claim; the finer rules (ranks,
the last owner) are enforced here.
"""

from __future__ import annotations

from collections.abc import Callable

from lorestore.auth.actor import Actor
from lorestore.core.errors import LorestoreError
from lorestore.core.owner import Owner
from lorestore.core.patterns import normalise_pattern, patterns_overlap, scope_allowed
from lorestore.core.scope import parse_scope
from lorestore.models import (
    MemberInfo,
    NoParams,
    OrgBindingResult,
    OrgBindParams,
    OrgCreateParams,
    OrgInfo,
    OrgListResult,
    OrgMemberParams,
    OrgMembersResult,
    OrgParams,
)
from lorestore.service.base import ServiceBase
from lorestore.storage.protocol import Transaction

ADMIN_ROLES = ("owner", "admin")
RANK = {"viewer": 0, "member": 1, "admin": 2, "owner": 3}


def org_key(text: str) -> str:
    """The key (``org:acme``) of the org a parameter names."""
    return _org(text).key


def user_key(text: str) -> str:
    """The key (``user:bob``) of the user a parameter names."""
    return _user(text).key


def _org(text: str, what: str = "the org") -> Owner:
    """The org a parameter names (``acme`` or ``org:acme``, any case)."""
    return _named(Owner.org, text, what)


def _user(text: str) -> Owner:
    """The user a parameter names (``alice`` or ``user:alice``, any case)."""
    return _named(Owner.user, text, "the user name")


def _named(make: Callable[[str], Owner], text: str, what: str) -> Owner:
    try:
        return make(text.strip().lower())
    except LorestoreError:
        raise LorestoreError(
            "invalid_argument",
            f"{what} {text!r} must be lower-case letters, digits, '.', '_' or '-' (max 63)",
            hint="e.g. acme or data-platform",
        ) from None


def _claim(pattern: str) -> list[str]:
    """The SQL LIKE patterns of the scopes a binding of ``pattern`` claims (a repository's
    branches with it); refuses a pattern that claims more than a named owner's or project's
    scopes: ``global``, or a wildcard in the project name or repository owner."""
    kind, _, rest = pattern.partition("::")
    first = rest.split("/", 1)[0].split("::", 1)[0]
    if kind == "global" or "*" in first:
        raise LorestoreError(
            "invalid_scope",
            f"{pattern} names no owner or project: bound, it would take every matching "
            "scope, whoever uses it, for one org",
            hint="bind scopes under a name the org stands for, e.g. repo::acme/* or "
            "project::payments",
            details={"pattern": pattern},
        )

    def like(text: str) -> str:
        escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return escaped.replace("*", "%")

    likes = [like(pattern)]
    if kind == "repo":
        likes.append(like(f"branch::{rest}") + "::%")
    return likes


class OrgRules(ServiceBase):
    """What every org operation checks first."""

    def _require_org_admin(self, tx: Transaction, actor: Actor, org: str) -> None:
        role = self._role(tx, actor, org)
        if role not in ADMIN_ROLES:
            raise LorestoreError(
                "forbidden",
                f"managing {org} needs its owner or admin role"
                + (f"; you are {role}" if role else "; you are not a member"),
                details={"org": org, "role": role},
            )


class OrgOperations(OrgRules):
    def org_create(self, actor: Actor, p: OrgCreateParams) -> OrgInfo:
        self._authorise(actor, "admin")
        self._unconfined(actor, "creating an org")
        slug = _org(p.slug, "the org slug")
        org = slug.key
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            if not tx.create_org(org, (p.name or slug.name).strip(), actor.principal, self._now()):
                raise LorestoreError(
                    "conflict",
                    f"{org} already exists",
                    hint="pick another slug, or ask its admins for an invite",
                )
            self._audit(tx, actor, "org.create", None, owner=org, detail={"org": org})
        return OrgInfo(org=org, role="owner")

    def org_list(self, actor: Actor, p: NoParams) -> OrgListResult:
        self._require(actor, "read")
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            members = tx.memberships(actor.principal)
        return OrgListResult(orgs=[OrgInfo(org=m.org, role=m.role) for m in members])

    def org_members(self, actor: Actor, p: OrgParams) -> OrgMembersResult:
        self._require(actor, "read")
        org = _org(p.org).key
        self._within_orgs(actor, org)
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            if self._role(tx, actor, org) is None:
                raise LorestoreError("not_found", f"you are not a member of {org}")
            members = tx.org_members(org)
        return OrgMembersResult(
            org=org,
            members=[MemberInfo(member=m.member, role=m.role, since=m.created_at) for m in members],
        )

    def org_remove(self, actor: Actor, p: OrgMemberParams) -> OrgMembersResult:
        self._authorise(actor, "admin")
        org = _org(p.org).key
        member = _user(p.user).key
        self._within_orgs(actor, org)
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            members = tx.org_members(org)
            if member != actor.principal:
                self._require_org_admin(tx, actor, org)
                roles = {m.member: m.role for m in members}
                if roles.get(member) == "owner" and roles.get(actor.principal) != "owner":
                    raise LorestoreError(
                        "forbidden",
                        f"{member} is an owner of {org}; only an owner can remove an owner",
                        details={"org": org, "member": member},
                    )
            owners = [m.member for m in members if m.role == "owner"]
            if owners == [member]:
                raise LorestoreError(
                    "conflict",
                    f"{member} is the last owner of {org}",
                    hint="make someone else an owner first",
                )
            # An admin's removal in the org's chain; a member leaving, in their own (a viewer
            # may not write the org's).
            role = {m.member: m.role for m in members}.get(member)
            chain = actor.principal if member == actor.principal else org
            detail = {"org": org, "member": member, "role": role}
            self._audit(tx, actor, "org.remove", None, owner=chain, detail=detail)
            if not tx.remove_member(org, member):
                raise LorestoreError("not_found", f"{member} is not a member of {org}")
            remaining = tx.org_members(org) if member != actor.principal else []
        return OrgMembersResult(
            org=org,
            members=[
                MemberInfo(member=m.member, role=m.role, since=m.created_at) for m in remaining
            ],
        )

    def org_bind(self, actor: Actor, p: OrgBindParams) -> OrgBindingResult:
        return self._binding(actor, p, bind=True)

    def org_unbind(self, actor: Actor, p: OrgBindParams) -> OrgBindingResult:
        return self._binding(actor, p, bind=False)

    def _binding(self, actor: Actor, p: OrgBindParams, *, bind: bool) -> OrgBindingResult:
        self._authorise(actor, "admin")
        org = _org(p.org).key
        pattern = normalise_pattern(p.pattern)
        likes = _claim(pattern) if bind else []  # bad input is refused before any state
        self._within_orgs(actor, org)
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            self._require_org_admin(tx, actor, org)
            if bind:
                # Two orgs' bindings may not share a scope: the narrower would win ("most
                # specific") and take the other org's scopes, whichever came first (a branch
                # pattern under a repository wildcard, a wildcard over a bound repository).
                for other in tx.bindings_for(actor.principal):
                    if other.org != org and patterns_overlap(pattern, other.pattern):
                        raise LorestoreError(
                            "conflict",
                            f"{pattern} shares scopes with {other.pattern}, bound to {other.org}; "
                            f"bound to {org} it would take some of them from {other.org}",
                            hint=f"ask an admin of {other.org} to unbind {other.pattern} first, "
                            "or bind a pattern that shares no scope with it",
                            details={"pattern": pattern, "bound": other.pattern, "org": other.org},
                        )
                if tx.scopes_held_by_others(org, actor.principal, likes):
                    raise LorestoreError(
                        "conflict",
                        f"lessons of other owners are kept at scopes {pattern} covers; bound "
                        f"to {org}, they would be cut off from their owners",
                        hint="bind a narrower pattern, or have those lessons moved into the org "
                        "first (lorestore export, then import into the org's scope)",
                        details={"pattern": pattern, "org": org},
                    )
                if not tx.insert_binding(org, pattern, actor.principal, self._now()):
                    raise LorestoreError(
                        "conflict",
                        f"{pattern} is already bound to an org",
                        hint="unbind it there first",
                    )
            elif not tx.delete_binding(org, pattern):
                raise LorestoreError("not_found", f"{pattern} is not bound to {org}")
            action = "org.bind" if bind else "org.unbind"  # which tenant owns a scope: audited
            self._audit(tx, actor, action, None, owner=org, detail={"org": org, "pattern": pattern})
            # The binder's own lessons there are not the org's: say how many the binding routes
            # away from their owner (unbinding brings them back).
            counts = tx.scope_counts([actor.owner], self._now()) if bind else []
            routed = sum(
                c.active + c.archived + c.expired + c.rejected
                for c in counts
                if scope_allowed((pattern,), parse_scope(c.scope))
            )
        return OrgBindingResult(org=org, pattern=pattern, bound=bind, own_lessons_routed=routed)
