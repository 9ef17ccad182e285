"""Organisations: create, list, members and scope bindings (invites: service/invites.py).

Every membership change is checked here against the actor's role in the org and its
rank (only an owner invites or removes an owner; the last owner stays). On PostgreSQL the
row-level policies confine membership changes to orgs the actor administers, and definer
functions create orgs, accept invites and check a binding's claim; the finer rules (ranks,
the last owner) are enforced here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from lorestore.auth.actor import Actor
from lorestore.core.errors import LorestoreError
from lorestore.core.owner import Owner
from lorestore.core.patterns import (
    normalise_pattern,
    pattern_within,
    patterns_overlap,
    scope_allowed,
)
from lorestore.core.scope import parse_scope
from lorestore.models import (
    BindingInfo,
    MemberInfo,
    NoParams,
    OrgBindingResult,
    OrgBindingsResult,
    OrgBindParams,
    OrgCreateParams,
    OrgInfo,
    OrgListResult,
    OrgMemberParams,
    OrgMembersResult,
    OrgParams,
)
from lorestore.service.base import ServiceBase
from lorestore.storage.protocol import Binding, Store, Transaction

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


def _check_claim(pattern: str) -> None:
    """Refuse a pattern that claims more than a named owner's or project's scopes: ``global``,
    or a wildcard in the project name or repository owner."""
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


APPROVAL_HINT = (
    "an operator approves it where the database is: lorestore db approve-binding ORG PATTERN "
    "(with a superuser --database-url on PostgreSQL); until then it routes nothing"
)


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

    @contextmanager
    def _member_read(self, actor: Actor, name: str) -> Iterator[tuple[Transaction, str]]:
        """A read transaction on one of the actor's orgs and the org's key; a non-member (or
        a token confined to other orgs) is refused before anything of the org is read."""
        self._require(actor, "read")
        org = _org(name).key
        self._within_orgs(actor, org)
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            if self._role(tx, actor, org) is None:
                raise LorestoreError("not_found", f"you are not a member of {org}")
            yield tx, org

    def org_members(self, actor: Actor, p: OrgParams) -> OrgMembersResult:
        with self._member_read(actor, p.org) as (tx, org):
            members = tx.org_members(org)
        return OrgMembersResult(
            org=org,
            members=[MemberInfo(member=m.member, role=m.role, since=m.created_at) for m in members],
        )

    def org_bindings(self, actor: Actor, p: OrgParams) -> OrgBindingsResult:
        """The scope patterns routed to an org (and those waiting for approval), for its
        members: which scopes the org's lessons live in."""
        with self._member_read(actor, p.org) as (tx, org):
            bound = [b.pattern for b in tx.bindings_for(actor.principal) if b.org == org]
            waiting = [b.pattern for b in tx.pending_bindings() if b.org == org]
        return OrgBindingsResult(
            org=org,
            bindings=[BindingInfo(pattern=x, pending=False) for x in sorted(bound)]
            + [BindingInfo(pattern=x, pending=True) for x in sorted(waiting)],
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
        if bind:
            _check_claim(pattern)  # bad input is refused before any state
        self._within_orgs(actor, org)
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            self._require_org_admin(tx, actor, org)
            if bind:
                # Two orgs' bindings may not share a scope: the narrower would win ("most
                # specific") and take the other org's scopes, whichever came first (a branch
                # pattern under a repository wildcard, a wildcard over a bound repository).
                bindings = tx.bindings_for(actor.principal)
                for other in [*bindings, *tx.pending_bindings()]:
                    if other.org != org and patterns_overlap(pattern, other.pattern):
                        raise LorestoreError(
                            "conflict",
                            f"{pattern} shares scopes with {other.pattern}, bound to {other.org}; "
                            f"bound to {org} it would take some of them from {other.org}",
                            hint=f"ask an admin of {other.org} to unbind {other.pattern} first, "
                            "or bind a pattern that shares no scope with it",
                            details={"pattern": pattern, "bound": other.pattern, "org": other.org},
                        )
                approved = self._approvable(tx, actor, org, pattern, bindings)
                if not tx.insert_binding(
                    org, pattern, actor.principal, self._now(), approved=approved
                ):
                    raise LorestoreError(
                        "conflict",
                        f"{pattern} is already bound to an org",
                        hint="unbind it there first",
                    )
            elif not tx.delete_binding(org, pattern):
                raise LorestoreError("not_found", f"{pattern} is not bound to {org}")
            action = "org.bind" if bind else "org.unbind"  # which tenant owns a scope: audited
            detail: dict[str, object] = {"org": org, "pattern": pattern}
            if bind:
                detail["approved"] = approved
            self._audit(tx, actor, action, None, owner=org, detail=detail)
            # The binder's own lessons there are not the org's: say how many the binding routes
            # away from their owner (unbinding brings them back).
            counts = tx.scope_counts([actor.owner], self._now()) if bind and approved else []
            routed = sum(
                c.active + c.archived + c.expired + c.rejected
                for c in counts
                if scope_allowed((pattern,), parse_scope(c.scope))
            )
        pending = bind and not approved
        return OrgBindingResult(
            org=org,
            pattern=pattern,
            bound=bind and approved,
            pending=pending,
            hint=APPROVAL_HINT if pending else None,
            own_lessons_routed=routed,
        )

    def _approvable(
        self, tx: Transaction, actor: Actor, org: str, pattern: str, bindings: list[Binding]
    ) -> bool:
        """Whether a new binding routes at once: it lies within one the org holds already, or
        nobody outside the org holds anything here (a single team's store; there the claim is
        checked against the lessons others keep, and refused, since only members can ask).
        Any other waits for an operator, and the answer says nothing of others' lessons."""
        own = tuple(b.pattern for b in bindings if b.org == org)
        if pattern_within(pattern, own):
            return True
        if tx.org_has_outsiders(org):
            return False
        if tx.scopes_held_by_others(org, actor.principal, pattern):
            raise LorestoreError(
                "conflict",
                f"lessons of other owners are kept at scopes {pattern} covers; bound "
                f"to {org}, they would be cut off from their owners",
                hint="bind a narrower pattern, or have those lessons moved into the org "
                "first (lorestore export, then import into the org's scope)",
                details={"pattern": pattern, "org": org},
            )
        return True


def approve_binding(store: Store, org: str, pattern: str, *, reject: bool, at: str) -> bool:
    """An operator's decision on a pending binding, on a store opened with rights over every
    tenant. Approving refuses (``conflict``) while other owners keep lessons at the scopes it
    claims; True when approved, False when rejected."""
    org_id = _org(org).key
    pattern = normalise_pattern(pattern)
    with store.transaction(write=True, actor=None) as tx:
        if reject:
            if not tx.reject_binding(org_id, pattern):
                raise _no_request(org_id, pattern)
            return False
        if not any(b.org == org_id and b.pattern == pattern for b in tx.pending_bindings()):
            raise _no_request(org_id, pattern)
        if tx.binding_claims_held(org_id, pattern):
            raise LorestoreError(
                "conflict",
                f"other owners keep lessons at scopes {pattern} covers: approved, the binding "
                f"would cut them off from their lessons and route their writes to {org_id}",
                hint="if the org does stand for that name, have those lessons moved into it "
                "first; otherwise refuse the request (--reject)",
                details={"org": org_id, "pattern": pattern},
            )
        tx.approve_binding(org_id, pattern, "operator", at)
        return True


def _no_request(org: str, pattern: str) -> LorestoreError:
    return LorestoreError(
        "not_found",
        f"{org} has no pending binding of {pattern}",
        hint="lorestore db pending-bindings lists the requests waiting for approval",
        details={"org": org, "pattern": pattern},
    )
