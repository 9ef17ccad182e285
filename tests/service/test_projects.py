"""Projects on both backends, through the service: a person declares which repositories form a
project, recall derives the project rung(s) from the repository (several projects: several
rungs, by name), an explicit project still applies, an org's project is its members' only,
another tenant's declaration never applies, and an agent cannot declare. Each refusal beside
its control."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import table_rows
from tests.portable import export_lines, import_lines, line

from lorestore.auth.actor import local_actor, local_agent
from lorestore.core.errors import LorestoreError
from lorestore.models import (
    AuditParams,
    ExplainParams,
    NoParams,
    OrgBindParams,
    OrgCreateParams,
    ProjectAddParams,
    ProjectRemoveParams,
    RecallParams,
    WriteParams,
)
from lorestore.portable.lorekit_writer import TreeWriter
from lorestore.service import LessonService

ALICE = local_actor(principal="user:alice", session="a")
BOB = local_actor(principal="user:bob", session="b")
MALLORY = local_actor(principal="user:mallory", session="m")


def add(service: LessonService, actor, name: str, *repos: str):  # type: ignore[no-untyped-def]
    return service.project_add(actor, ProjectAddParams(name=name, repos=list(repos)))


def write(service: LessonService, actor, scope: str, key: str, value: str) -> None:  # type: ignore[no-untyped-def]
    service.memory_write(actor, WriteParams(scope=scope, key=key, value=value))


def recall(service: LessonService, actor, **context):  # type: ignore[no-untyped-def]
    return service.memory_recall(actor, RecallParams(**context))


def offered(result) -> list[str]:  # type: ignore[no-untyped-def]
    return [o.lesson.key for o in result.offered]


def code_of(fn) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(LorestoreError) as err:
        fn()
    return err.value.code


def test_add_list_remove_and_audit(service: LessonService) -> None:
    added = add(service, ALICE, "Billing", "Acme/App", "acme/api", "acme/app")
    assert (added.name, added.scope, added.owner) == ("billing", "project::billing", "user:alice")
    assert added.repos == ["acme/api", "acme/app"] and added.changed == ["acme/app", "acme/api"]
    again = add(service, ALICE, "billing", "acme/app")
    assert again.changed == [] and again.repos == ["acme/api", "acme/app"]
    listed = service.project_list(ALICE, NoParams()).projects
    assert [(p.name, p.repos) for p in listed] == [("billing", ["acme/api", "acme/app"])]
    assert service.project_list(BOB, NoParams()).projects == []  # another person's: not listed
    removed = service.project_remove(ALICE, ProjectRemoveParams(name="billing", repos=["acme/api"]))
    assert removed.changed == ["acme/api"] and removed.repos == ["acme/app"]
    gone = service.project_remove(ALICE, ProjectRemoveParams(name="billing"))
    assert gone.changed == ["acme/app"] and gone.repos == []
    assert service.project_list(ALICE, NoParams()).projects == []
    events = service.memory_audit(ALICE, AuditParams()).events
    actions = [(e.action, e.detail["repos"]) for e in reversed(events)]
    assert actions == [
        ("project.add", ["acme/app", "acme/api"]),  # the second add changed nothing: no event
        ("project.remove", ["acme/api"]),
        ("project.remove", ["acme/app"]),
    ]


@pytest.mark.parametrize(
    ("name", "repos", "code"),
    [
        ("billing", [], "invalid_argument"),
        ("billing", ["acme"], "invalid_argument"),
        ("billing", ["acme/app", "repo::acme/api"], "invalid_argument"),
        ("bill ing", ["acme/app"], "invalid_scope"),
        ("", ["acme/app"], "invalid_scope"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(
    service: LessonService, name: str, repos: list[str], code: str
) -> None:
    add(service, ALICE, "other", "acme/web")  # the control: a good declaration lands
    before = table_rows(service.store, "project_repos")
    assert code_of(lambda: add(service, ALICE, name, *repos)) == code
    assert table_rows(service.store, "project_repos") == before


def test_remove_of_what_is_not_there_changes_nothing(service: LessonService) -> None:
    add(service, ALICE, "billing", "acme/app", "acme/api")
    before = table_rows(service.store, "project_repos")
    missing = ProjectRemoveParams(name="billing", repos=["acme/api", "acme/nope"])
    assert code_of(lambda: service.project_remove(ALICE, missing)) == "not_found"
    unknown = ProjectRemoveParams(name="payments")
    assert code_of(lambda: service.project_remove(ALICE, unknown)) == "not_found"
    assert table_rows(service.store, "project_repos") == before


def test_an_agent_cannot_declare_a_project(service: LessonService) -> None:
    agent = local_agent(principal="user:alice", session="s")
    assert code_of(lambda: add(service, agent, "billing", "acme/app")) == "forbidden"
    assert (
        code_of(lambda: service.project_remove(agent, ProjectRemoveParams(name="billing")))
        == "forbidden"
    )
    assert table_rows(service.store, "project_repos") == []
    add(service, ALICE, "billing", "acme/app")  # the control: the person declares it
    assert [p.name for p in service.project_list(agent, NoParams()).projects] == ["billing"]


def test_recall_derives_the_project_rung_from_the_repository(service: LessonService) -> None:
    write(service, ALICE, "project::billing", "freeze", "Deploys freeze on Fridays.")
    before = recall(service, ALICE, repo="acme/app", task="deploy")
    assert offered(before) == [] and before.context.projects == []
    add(service, ALICE, "billing", "acme/app")
    after = recall(service, ALICE, repo="acme/app", branch="main", task="deploy")
    assert after.context.ladder == [
        "branch::acme/app::main",
        "repo::acme/app",
        "project::billing",
        "global",
    ]
    assert after.context.projects == ["billing"] and offered(after) == ["freeze"]
    explained = service.memory_explain(ALICE, ExplainParams(recall_id=after.recall_id))
    assert explained.context["projects"] == ["billing"]
    other = recall(service, ALICE, repo="acme/web", task="deploy")  # not in the project
    assert offered(other) == [] and other.context.projects == []


def test_a_repository_in_two_projects_gets_two_rungs_by_name(service: LessonService) -> None:
    add(service, ALICE, "payments", "acme/app")
    add(service, ALICE, "billing", "acme/app")
    write(service, ALICE, "project::billing", "owner", "Billing is run by the ledger team.")
    write(service, ALICE, "project::payments", "owner", "Payments is run by the risk team.")
    write(service, ALICE, "project::payments", "pci", "Card numbers never reach the logs.")
    result = recall(service, ALICE, repo="acme/app")
    assert result.context.projects == ["billing", "payments"]
    assert result.context.ladder == [
        "repo::acme/app",
        "project::billing",
        "project::payments",
        "global",
    ]
    assert sorted(offered(result)) == ["owner", "pci"]
    # The same key in both: the first project by name shadows the second.
    assert [(h.scope, h.reasons) for h in result.held] == [
        ("project::payments", ["shadowed_by:project::billing"])
    ]
    # An explicit project comes first, then the derived ones, each once.
    named = recall(service, ALICE, repo="acme/app", project="payments")
    assert named.context.projects == ["payments", "billing"]
    assert [(h.scope, h.reasons) for h in named.held] == [
        ("project::billing", ["shadowed_by:project::payments"])
    ]
    # Without a repository, an explicit project still applies alone.
    alone = recall(service, ALICE, project="payments")
    assert alone.context.ladder == ["project::payments", "global"]


def test_another_tenants_project_does_not_apply(service: LessonService) -> None:
    add(service, MALLORY, "billing", "acme/app")
    write(service, MALLORY, "project::billing", "theirs", "Mallory's billing lesson.")
    write(service, BOB, "project::billing", "mine", "Bob's billing lesson.")
    refused = recall(service, BOB, repo="acme/app")
    assert refused.context.projects == [] and offered(refused) == []
    # The control: Bob's own declaration brings the rung, and only Bob's lesson there.
    add(service, BOB, "billing", "acme/app")
    derived = recall(service, BOB, repo="acme/app")
    assert derived.context.projects == ["billing"] and offered(derived) == ["mine"]


def test_an_orgs_project_is_its_members_only(service: LessonService) -> None:
    from lorestore.models import OrgAcceptParams, OrgInviteParams

    service.org_create(ALICE, OrgCreateParams(slug="acme"))
    service.org_bind(ALICE, OrgBindParams(org="acme", pattern="project::payments"))
    declared = add(service, ALICE, "payments", "acme/app")
    assert declared.owner == "org:acme"
    write(service, ALICE, "project::payments", "pci", "Card numbers never reach the logs.")
    code = service.org_invite(ALICE, OrgInviteParams(org="acme", user="bob")).code
    service.org_accept(BOB, OrgAcceptParams(code=code))
    member = recall(service, BOB, repo="acme/app")
    assert member.context.projects == ["payments"] and offered(member) == ["pci"]
    outsider = recall(service, MALLORY, repo="acme/app")
    assert outsider.context.projects == [] and offered(outsider) == []
    # An outsider cannot declare at the org's project scope either.
    assert code_of(lambda: add(service, MALLORY, "payments", "mallory/app")) == "forbidden"


def test_projects_travel_in_the_export_and_only_a_reviewer_imports_them(
    service: LessonService, tmp_path: Path
) -> None:
    add(service, ALICE, "billing", "acme/app", "acme/api")
    records = [json.loads(raw) for raw in export_lines(service, ALICE)[1:]]
    projects = [r for r in records if r["type"] == "project"]
    assert [(p["scope"], p["repo"]) for p in projects] == [
        ("project::billing", "acme/api"),
        ("project::billing", "acme/app"),
    ]
    lines = [line(p) for p in projects]
    agent = local_agent(principal="user:bob", session="s")
    refused = import_lines(service, lines, agent)
    assert refused.projects.refused == 2 and {p.code for p in refused.problems} == {"forbidden"}
    assert service.project_list(BOB, NoParams()).projects == []
    landed = import_lines(service, lines, BOB)  # the control: the person imports them
    assert landed.projects.added == 2
    assert recall(service, BOB, repo="acme/app").context.projects == ["billing"]
    assert import_lines(service, lines, BOB).projects.unchanged == 2
    # A LoreKit tree has no place for them: its writer counts them as not kept.
    report = TreeWriter(tmp_path).write_all(records)
    assert report.not_kept["projects"] == 2
