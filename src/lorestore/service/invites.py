"""Invites into an org: issued with a one-time code by its owners and admins, listed and
revoked by them, accepted by the person they name. An invite speaks for its creator's role:
when that role ends (removed, demoted) the database voids its pending invites; PostgreSQL
dates invites and judges their expiry by its own clock, never by a time the caller passes."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from datetime import timedelta

from lorestore.auth.actor import Actor
from lorestore.core.errors import LorestoreError
from lorestore.core.timestamps import format_ts
from lorestore.models import (
    InviteInfo,
    OrgAcceptParams,
    OrgInfo,
    OrgInviteParams,
    OrgInviteResult,
    OrgInviteRevokeParams,
    OrgInvitesResult,
    OrgParams,
)
from lorestore.service.base import bounded
from lorestore.service.orgs import RANK, OrgRules, org_key, user_key
from lorestore.storage.protocol import Invite


def _code_hash(code: str) -> str:
    return hashlib.sha256(code.strip().encode("utf-8")).hexdigest()


def _info(invite: Invite, now: str) -> InviteInfo:
    if invite.accepted_at is not None:
        state = "accepted"
    elif invite.revoked_at is not None:
        state = "revoked" if invite.revoked_by is not None else "void"
    elif invite.expires_at <= now:
        state = "expired"
    else:
        state = "pending"
    return InviteInfo(
        id=invite.id,
        org=invite.org,
        invitee=invite.invitee,
        role=invite.role,
        created_by=invite.created_by,
        created_at=invite.created_at,
        expires_at=invite.expires_at,
        state=state,  # type: ignore[arg-type]
        accepted_at=invite.accepted_at,
        revoked_at=invite.revoked_at,
        revoked_by=invite.revoked_by,
    )


class InviteOperations(OrgRules):
    def org_invite(self, actor: Actor, p: OrgInviteParams) -> OrgInviteResult:
        self._authorise(actor, "admin")
        org = org_key(p.org)
        invitee = user_key(p.user)
        self._within_orgs(actor, org)
        if invitee == actor.principal:  # an invite kept back would outlast the inviter's removal
            raise LorestoreError(
                "invalid_argument",
                "an invite is for someone else: you cannot invite yourself",
                hint="a role of your own changes when an owner or admin invites you",
            )
        days = bounded("expires_days", p.expires_days, 1, 90)
        now = self.clock()
        code = "inv_" + secrets.token_urlsafe(24)
        invite = Invite(
            id=str(uuid.uuid4()),
            org=org,
            invitee=invitee,
            role=p.role,
            created_by=actor.principal,
            created_at=format_ts(now),
            expires_at=format_ts(now + timedelta(days=days)),
        )
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            self._require_org_admin(tx, actor, org)
            if p.role == "owner" and self._role(tx, actor, org) != "owner":
                raise LorestoreError("forbidden", "only an owner can invite another owner")
            expires_at = tx.insert_invite(invite, _code_hash(code))
            detail = {"org": org, "invite": invite.id, "invitee": invitee, "role": p.role}
            self._audit(tx, actor, "org.invite", None, owner=org, detail=detail)
        return OrgInviteResult(
            id=invite.id, code=code, org=org, invitee=invitee, role=p.role, expires_at=expires_at
        )

    def org_invites(self, actor: Actor, p: OrgParams) -> OrgInvitesResult:
        self._authorise(actor, "admin")
        org = org_key(p.org)
        self._within_orgs(actor, org)
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            self._require_org_admin(tx, actor, org)
            invites = tx.org_invites(org)
        now = self._now()
        return OrgInvitesResult(org=org, invites=[_info(i, now) for i in invites])

    def org_invite_revoke(self, actor: Actor, p: OrgInviteRevokeParams) -> InviteInfo:
        self._authorise(actor, "admin")
        org = org_key(p.org)
        self._within_orgs(actor, org)
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            self._require_org_admin(tx, actor, org)
            invite = next((i for i in tx.org_invites(org) if i.id == p.id.strip()), None)
            if invite is None or _info(invite, self._now()).state != "pending":
                raise LorestoreError(
                    "not_found",
                    f"{org} has no pending invite {p.id!r}",
                    hint=f"lorestore org invites {org.removeprefix('org:')} lists them with "
                    "their state",
                    details={"org": org, "id": p.id},
                )
            if invite.role == "owner" and self._role(tx, actor, org) != "owner":
                raise LorestoreError("forbidden", "only an owner can revoke an owner's invite")
            tx.revoke_invite(org, invite.id, actor.principal, self._now())
            detail = {"org": org, "invite": invite.id, "invitee": invite.invitee}
            self._audit(tx, actor, "org.invite_revoke", None, owner=org, detail=detail)
            revoked = next(i for i in tx.org_invites(org) if i.id == invite.id)
        return _info(revoked, self._now())

    def org_accept(self, actor: Actor, p: OrgAcceptParams) -> OrgInfo:
        self._require(actor, "write")
        # Joining puts the person's future lessons at the org's scopes into the org's hands:
        # theirs to decide, not an agent's or a token made for some scopes only.
        if not actor.is_person:
            raise LorestoreError(
                "forbidden",
                "joining an org is a person's decision: an agent's token cannot accept an invite",
                hint="accept it yourself: lorestore org accept CODE at your own command line, "
                "or with a review or admin token",
            )
        self._unconfined(actor, "joining an org")
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            before = {m.org: m.role for m in tx.memberships(actor.principal)}
            org = tx.accept_invite(_code_hash(p.code), actor.principal, self._now())
            if org is None:
                raise LorestoreError(
                    "not_found",
                    "no live invite for you with that code",
                    hint="an invite works once, for the user it names, until it expires or is "
                    "revoked",
                )
            role = self._role(tx, actor, org) or "member"
            held = before.get(org)
            if held is not None and RANK[role] < RANK[held]:
                # Raising here rolls the acceptance back: an invite never lowers a role (an
                # admin could otherwise demote the last owner by inviting them lower).
                raise LorestoreError(
                    "conflict",
                    f"you are already {held} of {org}; this invite would make you {role}",
                    hint="an invite only raises a role; an owner changes roles",
                    details={"org": org, "role": held, "invited_as": role},
                )
            detail = {"org": org, "member": actor.principal, "role": role, "before": held}
            # The new member's own chain: a viewer may not write the org's (its invite is
            # there, in the inviter's event).
            self._audit(tx, actor, "org.accept", None, owner=actor.principal, detail=detail)
        return OrgInfo(org=org, role=role)
