"""The shared primitives on who may do what: the audit log, tokens, orgs and members, invites,
scope bindings, caps, rate limits and scope policies."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from lorestore.core.audit import AuditHead
from lorestore.core.jsontext import dumps
from lorestore.storage.protocol import (
    AuditFilter,
    Binding,
    Invite,
    Membership,
    OwnerCaps,
    PolicyRow,
    ProjectRepo,
    TokenRecord,
)
from lorestore.storage.rows import (
    audit_dict,
    audit_from_row,
    audit_params,
    invite_from_row,
    invite_params,
    json_value,
    membership_from_row,
    policy_params,
    token_from_row,
    token_params,
    ts_text,
)
from lorestore.storage.sql.base import SQLBase

if TYPE_CHECKING:
    from lorestore.core.records import AuditEvent


class TenancyPrimitives(SQLBase):
    """Audit, tokens, orgs, bindings, caps, rate limits and policies, over the dialect."""

    # The audit log.

    def ask_audit_head(self, owner: str) -> None:
        """Nothing here: ``last_audit_hash`` reads it (PostgreSQL locks and asks early)."""

    def last_audit_hash(self, owner: str) -> str | None:
        row = self._one("last_audit_hash", {"owner": owner})
        return row["hash"] if row else None

    def append_audit(self, event: dict[str, Any]) -> None:
        params = dict(event)
        params["detail"] = dumps(event.get("detail") or {})
        self._exec("append_audit", params)

    def audit_events(self, query: AuditFilter) -> list[AuditEvent]:
        params = {
            "owners": self._array(query.owners),
            "scope": query.scope,
            "key": query.key,
            "since": query.since,
            "until": query.until,
            "after_id": query.after_id,
            "limit": query.limit,
        }
        if query.scope and query.key:  # one address: equalities its index can seek
            rows = self._all("audit_events_at", params)
        else:
            rows = self._all("audit_events", params)
        return [audit_from_row(r) for r in rows]

    def audit_chain(self, owner: str) -> Iterator[dict[str, Any]]:
        for row in self._exec("audit_chain", {"owner": owner}):
            yield audit_dict(row)

    def append_audits(self, events: Sequence[dict[str, Any]]) -> None:
        self._insert_rows("append_audits", [audit_params(e) for e in events])

    def audit_head(self, owner: str) -> AuditHead | None:
        row = self._one("audit_head", {"owner": owner})
        return AuditHead(int(row["events"]), str(row["last_hash"])) if row else None

    # Tokens, orgs, bindings, caps, rate limits, policies.

    def insert_token(self, token: TokenRecord, token_hash: str) -> None:
        self._exec("insert_token", token_params(token, token_hash))

    def token_by_hash(self, token_hash: str) -> TokenRecord | None:
        row = self._one("token_by_hash", {"token_hash": token_hash})
        return token_from_row(row) if row else None

    def list_tokens(self, principal: str) -> list[TokenRecord]:
        return [token_from_row(r) for r in self._all("list_tokens", {"principal": principal})]

    def revoke_token(self, principal: str, token_id: str, at: str) -> bool:
        if not self._valid_id(token_id):
            return False
        params = {"principal": principal, "id": token_id, "at": at}
        return self._count("revoke_token", params) == 1

    def touch_token(self, token_id: str, at: str) -> None:
        self._exec("touch_token", {"id": token_id, "at": at})

    def ask_bindings(self, principal: str) -> None:
        self._ask("bindings_for", {"principal": principal})

    def bindings_for(self, principal: str) -> list[Binding]:
        rows = self._all("bindings_for", {"principal": principal})
        return [Binding(r["org"], r["pattern"], r["role"]) for r in rows]

    def memberships(self, principal: str) -> list[Membership]:
        return [membership_from_row(r) for r in self._all("memberships", {"principal": principal})]

    def org_members(self, org: str) -> list[Membership]:
        return [membership_from_row(r) for r in self._all("org_members", {"org": org})]

    def set_member(self, org: str, member: str, role: str, at: str) -> None:
        self._exec("set_member", {"org": org, "member": member, "role": role, "at": at})

    def remove_member(self, org: str, member: str) -> bool:
        return self._count("remove_member", {"org": org, "member": member}) == 1

    def insert_invite(self, invite: Invite, code_hash: str) -> str:
        row = self._one("insert_invite", invite_params(invite, code_hash))
        return ts_text(row["expires_at"]) or invite.expires_at

    def org_invites(self, org: str) -> list[Invite]:
        return [invite_from_row(r) for r in self._all("org_invites", {"org": org})]

    def revoke_invite(self, org: str, invite_id: str, by: str, at: str) -> bool:
        if not self._valid_id(invite_id):
            return False
        params = {"org": org, "id": invite_id, "by": by, "at": at}
        return self._count("revoke_invite", params) == 1

    def insert_binding(self, org: str, pattern: str, by: str, at: str, *, approved: bool) -> bool:
        params = {"org": org, "pattern": pattern, "by": by, "at": at, "approved": approved}
        return self._count("insert_binding", params) == 1

    def pending_bindings(self) -> list[Binding]:
        return [Binding(r["org"], r["pattern"], None) for r in self._all("pending_bindings", {})]

    def org_has_outsiders(self, org: str) -> bool:
        row = self._one("org_has_outsiders", {"org": org})
        return bool(row and row["outsiders"])

    def binding_claims_held(self, org: str, pattern: str) -> bool:
        row = self._one("binding_claims_held", {"org": org, "pattern": pattern})
        return bool(row and row["held"])

    def approve_binding(self, org: str, pattern: str, by: str, at: str) -> bool:
        params = {"org": org, "pattern": pattern, "by": by, "at": at}
        return self._count("approve_binding", params) == 1

    def reject_binding(self, org: str, pattern: str) -> bool:
        return self._count("reject_binding", {"org": org, "pattern": pattern}) == 1

    def delete_binding(self, org: str, pattern: str) -> bool:
        return self._count("delete_binding", {"org": org, "pattern": pattern}) == 1

    def scopes_held_by_others(self, org: str, actor: str, pattern: str) -> bool:
        # PostgreSQL's definer function reads the actor from the session, not from here:
        # ``actor`` is that same principal.
        row = self._one("scopes_held_by_others", {"org": org, "actor": actor, "pattern": pattern})
        return bool(row and row["held"])

    def set_max_active(self, owner: str, limit: int | None) -> None:
        self._exec("set_max_active", {"owner": owner, "limit": limit})

    def set_max_bytes(self, owner: str, limit: int | None) -> None:
        self._exec("set_max_bytes", {"owner": owner, "limit": limit})

    def set_default_caps(self, max_active: int | None, max_bytes: int | None) -> None:
        self._exec("set_default_caps", {"max_active": max_active, "max_bytes": max_bytes})

    def owner_caps(self, owner: str | None) -> OwnerCaps:
        row = self._one("owner_caps", {"owner": owner})
        assert row is not None  # cap_defaults has its one row from the migration on
        return OwnerCaps(
            int(row["active_lessons"] or 0),
            int(row["stored_bytes"] or 0),
            row["max_active"],
            row["max_bytes"],
            row["default_active"],
            row["default_bytes"],
        )

    def store_setting(self, name: str) -> str | None:
        row = self._one("store_setting", {"name": name})
        return None if row is None else str(row["value"])

    def count_request(self, token_id: str, principal: str, window: str, requests: int = 1) -> int:
        params = {"token_id": token_id, "principal": principal, "window": window, "n": requests}
        row = self._one("count_request", params)
        assert row is not None
        return int(row["requests"])

    def scope_policies(self, owner: str, scopes: Sequence[str]) -> list[PolicyRow]:
        rows = self._all("scope_policies", {"owner": owner, "scopes": self._array(scopes)})
        return [
            PolicyRow(r["scope"], r["revision_policy"], bool(r["require_review"])) for r in rows
        ]

    def set_policy(self, owner: str, policy: PolicyRow, *, by: str, at: str) -> None:
        self._exec("set_policy", policy_params(owner, policy, by=by, at=at))

    # Projects: which repositories form each owner's projects.

    def add_project_repos(
        self, owner: str, project: str, repos: Sequence[str], *, by: str, at: str
    ) -> list[str]:
        params = {"owner": owner, "project": project, "at": at, "by": by, "ext": "{}"}
        return [r for r in repos if self._count("add_project_repo", params | {"repo": r})]

    def import_project_repo(self, record: ProjectRepo) -> bool:
        params = {
            "owner": record.owner,
            "project": record.project,
            "repo": record.repo,
            "at": record.added_at,
            "by": record.added_by,
            "ext": dumps(record.ext),
        }
        return self._count("add_project_repo", params) == 1

    def remove_project_repos(
        self, owner: str, project: str, repos: Sequence[str] | None
    ) -> list[str]:
        params = {"owner": owner, "project": project}
        if repos is None:
            return [r["repo"] for r in self._all("remove_project", params)]
        return [r for r in repos if self._count("remove_project_repo", params | {"repo": r})]

    def project_repos(self, owners: Sequence[str]) -> list[ProjectRepo]:
        rows = self._all("project_repos", {"owners": self._array(owners)})
        return [_project_repo(r) for r in rows]

    def projects_of_repo(self, owners: Sequence[str], repo: str) -> list[ProjectRepo]:
        rows = self._all("projects_of_repo", {"owners": self._array(owners), "repo": repo})
        return [_project_repo(r) for r in rows]


def _project_repo(row: Any) -> ProjectRepo:
    return ProjectRepo(
        row["owner"],
        row["project"],
        row["repo"],
        str(ts_text(row["added_at"])),
        row["added_by"],
        json_value(row["ext"]),
    )
