"""Projects: which repositories form a project (``project_add``, ``project_remove``,
``project_list``). The project rungs recall and search derive from a repository are
service/recaller.py's (``project_names``).

Declaring is a person's act (the ``review`` permission): it decides which lessons reach every
task in those repositories. A project belongs to the owner its scope ``project::NAME`` routes
to (a scope binding makes it an org's, as it does the lessons written there), and only the
declarations of owners the actor may read ever apply to its tasks.
"""

from __future__ import annotations

from lorestore.auth.actor import Actor
from lorestore.core.errors import LorestoreError
from lorestore.core.patterns import scope_allowed
from lorestore.core.scope import parse_scope, repository
from lorestore.models import (
    NoParams,
    ProjectAddParams,
    ProjectChangeResult,
    ProjectInfo,
    ProjectListResult,
    ProjectRemoveParams,
)
from lorestore.service.base import ServiceBase
from lorestore.storage.protocol import Transaction


def _project_scope(name: str) -> str:
    """``project::NAME`` of a project name; refused as the scope grammar refuses it."""
    return parse_scope(f"project::{name.strip()}").text


def _repos(repos: list[str]) -> list[str]:
    """The canonical, de-duplicated repositories a call names, in the order given."""
    return list(dict.fromkeys(repository(r) for r in repos))


class ProjectOperations(ServiceBase):
    def project_add(self, actor: Actor, p: ProjectAddParams) -> ProjectChangeResult:
        scope = _project_scope(p.name)
        self._authorise(actor, "review", scope)
        repos = _repos(p.repos)
        if not repos:
            raise LorestoreError(
                "invalid_argument",
                "project_add needs at least one repository",
                hint=f"lorestore project add {scope.removeprefix('project::')} OWNER/REPO...",
            )
        name = scope.removeprefix("project::")
        now = self._now()
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            owner = self._owner_for(tx, actor, scope, write=True)
            added = tx.add_project_repos(owner, name, repos, by=actor.principal, at=now)
            if added:
                self._audit_project(tx, actor, "project.add", owner, name, added)
            return _changed(tx, owner, name, added)

    def project_remove(self, actor: Actor, p: ProjectRemoveParams) -> ProjectChangeResult:
        scope = _project_scope(p.name)
        self._authorise(actor, "review", scope)
        named = None if not p.repos else _repos(p.repos)
        name = scope.removeprefix("project::")
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            owner = self._owner_for(tx, actor, scope, write=True)
            held = _repos_of(tx, owner, name)
            missing = [r for r in named or [] if r not in held]
            if not held or missing:
                # Checked before anything is removed: a call that cannot do all it was asked
                # changes nothing.
                raise LorestoreError(
                    "not_found",
                    f"{scope} holds no repository {', '.join(missing)}"
                    if held
                    else f"no project {name!r} is declared for {owner}",
                    hint="lorestore project list shows the projects and their repositories",
                    details={"project": name, "owner": owner, "missing": missing},
                )
            removed = tx.remove_project_repos(owner, name, named)
            self._audit_project(tx, actor, "project.remove", owner, name, removed)
            return _changed(tx, owner, name, removed)

    def project_list(self, actor: Actor, p: NoParams) -> ProjectListResult:
        self._require(actor, "read")
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            rows = tx.project_repos(self._readable_owners(tx, actor))
        grouped: dict[tuple[str, str], list[str]] = {}
        for row in rows:
            grouped.setdefault((row.owner, row.project), []).append(row.repo)
        projects = [
            ProjectInfo(name=name, scope=f"project::{name}", owner=owner, repos=repos)
            for (owner, name), repos in grouped.items()
            # A token confined to some scopes sees only the projects it covers.
            if actor.scopes is None or scope_allowed(actor.scopes, parse_scope(f"project::{name}"))
        ]
        return ProjectListResult(projects=projects)

    def _audit_project(
        self, tx: Transaction, actor: Actor, action: str, owner: str, name: str, repos: list[str]
    ) -> None:
        """Which repositories form a project decides what reaches their tasks: audited, in
        the chain of the project's owner."""
        detail = {"owner": owner, "project": name, "repos": repos}
        self._audit(tx, actor, action, None, owner=owner, detail=detail)


def _repos_of(tx: Transaction, owner: str, name: str) -> list[str]:
    return [r.repo for r in tx.project_repos([owner]) if r.project == name]


def _changed(tx: Transaction, owner: str, name: str, changed: list[str]) -> ProjectChangeResult:
    return ProjectChangeResult(
        name=name,
        scope=f"project::{name}",
        owner=owner,
        repos=_repos_of(tx, owner, name),
        changed=changed,
    )
