"""Organisations on both backends, through the service: bindings route scopes to an org,
members read and write there, viewers only read, outsiders are refused, invites work once
for the user they name, and a removed member stops seeing the org's lessons."""

from __future__ import annotations

import json

import pytest
from tests.conftest import operator_approve, set_cap

from lorestore.auth.actor import local_actor
from lorestore.core.errors import LorestoreError
from lorestore.core.owner import Owner
from lorestore.models import (
    ChangeParams,
    ListParams,
    NoParams,
    OrgAcceptParams,
    OrgBindParams,
    OrgCreateParams,
    OrgInviteParams,
    OrgMemberParams,
    OrgParams,
    ReadParams,
    SearchParams,
    TokenCreateParams,
    WriteParams,
)
from lorestore.service import LessonService

ALICE = local_actor(principal="user:alice", session="a")
BOB = local_actor(principal="user:bob", session="b")
CAROL = local_actor(principal="user:carol", session="c")
TEAM = "repo::acme/app"
PRIVATE = "repo::bob/dotfiles"


def code_of(fn) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(LorestoreError) as err:
        fn()
    return err.value.code


def write(service, actor, scope, value, key="k"):  # type: ignore[no-untyped-def]
    return service.memory_write(actor, WriteParams(scope=scope, key=key, value=value))


def read(service, actor, scope, key="k"):  # type: ignore[no-untyped-def]
    return service.memory_read(actor, ReadParams(scope=scope, key=key)).lesson


def invite(service, user, role="member"):  # type: ignore[no-untyped-def]
    return service.org_invite(ALICE, OrgInviteParams(org="acme", user=user, role=role)).code


@pytest.fixture
def acme(service: LessonService) -> LessonService:
    service.org_create(ALICE, OrgCreateParams(slug="acme", name="Acme"))
    service.org_bind(ALICE, OrgBindParams(org="acme", pattern="repo::acme/*"))
    write(service, ALICE, TEAM, "Integration tests need the local Postgres")
    return service


def test_bound_scope_belongs_to_the_org(acme: LessonService) -> None:
    lesson = read(acme, ALICE, TEAM)
    assert lesson.owner == Owner.org("acme")
    branch = write(acme, ALICE, "branch::acme/app::main", "branch lesson").lesson
    assert branch.owner == Owner.org("acme")  # a branch scope follows its repository's binding
    personal = write(acme, ALICE, "repo::alice/notes", "mine").lesson
    assert personal.owner == Owner.user("alice")


def test_outsiders_are_refused_not_silently_rerouted(acme: LessonService) -> None:
    assert code_of(lambda: read(acme, BOB, TEAM)) == "forbidden"
    assert code_of(lambda: write(acme, BOB, TEAM, "bob's take")) == "forbidden"
    assert (
        code_of(lambda: acme.memory_search(BOB, SearchParams(query="postgres", scopes=[TEAM])))
        == "forbidden"
    )
    # Positive control: bob's own scopes work.
    assert write(acme, BOB, PRIVATE, "bob's lesson").result == "created"
    assert read(acme, BOB, PRIVATE).owner == Owner.user("bob")
    # And the org's lessons are not in bob's inventory.
    scopes = acme.memory_scopes(BOB, NoParams()).scopes
    assert [(s.owner, s.scope) for s in scopes] == [("user:bob", PRIVATE)]


def test_viewer_reads_but_cannot_write(acme: LessonService) -> None:
    code = invite(acme, "bob", role="viewer")
    joined = acme.org_accept(BOB, OrgAcceptParams(code=code))
    assert (joined.org, joined.role) == ("org:acme", "viewer")
    assert read(acme, BOB, TEAM).value == "Integration tests need the local Postgres"
    hits = acme.memory_search(BOB, SearchParams(query="postgres", scopes=[TEAM])).hits
    assert [h.lesson.key for h in hits] == ["k"]
    for call in (
        lambda: write(acme, BOB, TEAM, "viewer edit"),
        lambda: acme.memory_archive(BOB, ChangeParams(scope=TEAM, key="k")),
    ):
        assert code_of(call) == "forbidden"
    assert read(acme, ALICE, TEAM).version == 1


def test_member_writes_into_the_org(acme: LessonService) -> None:
    acme.org_accept(BOB, OrgAcceptParams(code=invite(acme, "bob")))
    updated = write(acme, BOB, TEAM, "Integration tests need Postgres 15").lesson
    assert (updated.owner, updated.version) == (Owner.org("acme"), 2)
    assert read(acme, ALICE, TEAM).value == "Integration tests need Postgres 15"


def test_invites_work_once_for_the_named_user(acme: LessonService) -> None:
    code = invite(acme, "carol")
    assert code_of(lambda: acme.org_accept(BOB, OrgAcceptParams(code=code))) == "not_found"
    assert code_of(lambda: acme.org_accept(CAROL, OrgAcceptParams(code="inv_wrong"))) == (
        "not_found"
    )
    assert acme.org_accept(CAROL, OrgAcceptParams(code=code)).role == "member"
    assert code_of(lambda: acme.org_accept(CAROL, OrgAcceptParams(code=code))) == "not_found"
    assert code_of(lambda: read(acme, BOB, TEAM)) == "forbidden"


def test_only_org_admins_manage_it(acme: LessonService) -> None:
    acme.org_accept(BOB, OrgAcceptParams(code=invite(acme, "bob")))
    for call in (
        lambda: acme.org_invite(BOB, OrgInviteParams(org="acme", user="carol")),
        lambda: acme.org_bind(BOB, OrgBindParams(org="acme", pattern="repo::acme2/*")),
        lambda: acme.org_remove(BOB, OrgMemberParams(org="acme", user="alice")),
    ):
        assert code_of(call) == "forbidden"
    assert code_of(lambda: acme.org_create(BOB, OrgCreateParams(slug="acme"))) == "conflict"
    members = acme.org_members(ALICE, OrgParams(org="acme")).members
    assert [(m.member, m.role) for m in members] == [
        ("user:alice", "owner"),
        ("user:bob", "member"),
    ]
    assert code_of(lambda: acme.org_members(CAROL, OrgParams(org="acme"))) == "not_found"
    assert code_of(lambda: acme.org_remove(ALICE, OrgMemberParams(org="acme", user="alice"))) == (
        "conflict"
    )  # the last owner cannot leave


def test_removed_member_stops_seeing(acme: LessonService) -> None:
    acme.org_accept(BOB, OrgAcceptParams(code=invite(acme, "bob")))
    assert read(acme, BOB, TEAM).key == "k"
    acme.org_remove(ALICE, OrgMemberParams(org="acme", user="bob"))
    assert code_of(lambda: read(acme, BOB, TEAM)) == "forbidden"
    assert code_of(lambda: acme.memory_list(BOB, ListParams(scope=TEAM))) == "forbidden"
    assert read(acme, ALICE, TEAM).key == "k"


def test_token_confined_to_an_org(acme: LessonService) -> None:
    token = acme.token_create(ALICE, TokenCreateParams(name="ci", orgs=["acme"])).token
    ci = acme.authenticate(token)
    assert read(acme, ci, TEAM).owner == Owner.org("acme")
    assert code_of(lambda: write(acme, ci, "repo::alice/notes", "personal")) == "forbidden"
    assert [s.owner for s in acme.memory_scopes(ci, NoParams()).scopes] == ["org:acme"]


def test_cap_on_active_lessons(service: LessonService, store) -> None:  # type: ignore[no-untyped-def]
    write(service, ALICE, "global", "one", key="1")
    set_cap(store, "user:alice", 2)
    write(service, ALICE, "global", "two", key="2")
    assert code_of(lambda: write(service, ALICE, "global", "three", key="3")) == "cap_exceeded"
    assert write(service, ALICE, "global", "two, revised", key="2").result == "updated"
    service.memory_archive(ALICE, ChangeParams(scope="global", key="1"))
    assert write(service, ALICE, "global", "three", key="3").result == "created"
    assert (
        code_of(lambda: service.memory_restore(ALICE, ChangeParams(scope="global", key="1")))
        == "cap_exceeded"
    )
    # Another owner is not affected.
    assert write(service, BOB, "global", "bob's", key="1").result == "created"


def test_a_binding_cannot_take_scopes_others_keep_lessons_in(service: LessonService) -> None:
    """Anyone may create an org; binding it over scopes where other people keep lessons would
    lock them out of their own lessons. With others in the store, a binding waits for an
    operator, answered the same whether anyone keeps lessons there (no oracle); the operator
    refuses it where they do. Every owner's or project's scopes are never the org's."""
    write(service, ALICE, "repo::alice/notes", "Alice's own lesson.")
    write(service, ALICE, "branch::alice/cli::main", "On main, run the slow tests too.")
    service.org_create(BOB, OrgCreateParams(slug="evil"))
    patterns = ("repo::alice/*", "repo::alice/notes", "branch::alice/cli::*", "repo::evil/*")
    answers = [service.org_bind(BOB, OrgBindParams(org="evil", pattern=p)) for p in patterns]
    assert {(a.bound, a.pending, a.hint) for a in answers} == {(False, True, answers[0].hint)}
    for pattern in ("global", "repo::*/*", "project::*", "branch::*/app::*"):
        bind = OrgBindParams(org="evil", pattern=pattern)
        assert code_of(lambda b=bind: service.org_bind(BOB, b)) == "invalid_scope", pattern
    assert read(service, ALICE, "repo::alice/notes").value == "Alice's own lesson."
    assert read(service, ALICE, "branch::alice/cli::main").value.startswith("On main")
    for pattern in patterns[:3]:
        with pytest.raises(LorestoreError) as refused:
            operator_approve(service.store, "evil", pattern)
        assert refused.value.code == "conflict", pattern
    write(service, ALICE, "repo::alice/notes", "Still mine.")  # nothing was rerouted
    # The control: a namespace nobody else uses is the org's once the operator approves it.
    assert operator_approve(service.store, "evil", "repo::evil/*")
    write(service, BOB, "repo::evil/app", "Org lesson.")
    assert read(service, BOB, "repo::evil/app").owner == Owner.org("evil")


def test_an_invite_cannot_outlast_a_removal_or_lower_an_owner(acme: LessonService) -> None:
    acme.org_accept(BOB, OrgAcceptParams(code=invite(acme, "bob", role="admin")))
    own = OrgInviteParams(org="acme", user="bob", role="admin")
    assert code_of(lambda: acme.org_invite(BOB, own)) == "invalid_argument"  # no self-invite
    lower = acme.org_invite(BOB, OrgInviteParams(org="acme", user="alice", role="viewer")).code
    assert code_of(lambda: acme.org_accept(ALICE, OrgAcceptParams(code=lower))) == "conflict"
    members = {m.member: m.role for m in acme.org_members(ALICE, OrgParams(org="acme")).members}
    assert members == {"user:alice": "owner", "user:bob": "admin"}  # nothing changed
    # The control: an invite that raises a role still works.
    acme.org_accept(CAROL, OrgAcceptParams(code=invite(acme, "carol", role="viewer")))
    acme.org_accept(CAROL, OrgAcceptParams(code=invite(acme, "carol", role="member")))
    members = {m.member: m.role for m in acme.org_members(ALICE, OrgParams(org="acme")).members}
    assert members["user:carol"] == "member"


def test_a_binding_cannot_take_scopes_inside_another_orgs(acme: LessonService) -> None:
    dave = local_actor(principal="user:dave", session="d")
    acme.org_create(dave, OrgCreateParams(slug="evil"))
    for pattern in ("repo::acme/app", "branch::acme/app::main", "repo::acme/newrepo"):
        bind = OrgBindParams(org="evil", pattern=pattern)
        assert code_of(lambda b=bind: acme.org_bind(dave, b)) == "conflict", pattern
    write(acme, ALICE, "branch::acme/app::main", "Still acme's")  # not rerouted to evil
    assert read(acme, ALICE, "branch::acme/app::main").owner == Owner.org("acme")
    elsewhere = acme.org_bind(dave, OrgBindParams(org="evil", pattern="repo::evil/*"))
    assert elsewhere.pending  # the control: a pattern outside acme's binding may be asked for
    assert operator_approve(acme.store, "evil", "repo::evil/*")


def test_org_and_token_changes_are_audited(acme: LessonService) -> None:
    """Who may act for an org, which scopes it owns and which tokens exist are changes like
    any other: each leaves an event, in the org's chain or the actor's, and the chains hold."""
    from lorestore.models import AuditParams, NoParams, TokenRevokeParams

    acme.org_accept(BOB, OrgAcceptParams(code=invite(acme, "bob")))
    acme.org_bind(ALICE, OrgBindParams(org="acme", pattern="repo::acme2/*"))
    acme.org_unbind(ALICE, OrgBindParams(org="acme", pattern="repo::acme2/*"))
    acme.org_remove(ALICE, OrgMemberParams(org="acme", user="bob"))
    made = acme.token_create(ALICE, TokenCreateParams(name="ci", permission="read")).info
    acme.token_revoke(ALICE, TokenRevokeParams(id=made.id))
    actions = [e.action for e in acme.memory_audit(ALICE, AuditParams()).events]
    for action in ("org.create", "org.bind", "org.invite", "org.unbind", "org.remove"):
        assert action in actions, action
    assert "token.create" in actions and "token.revoke" in actions
    details = json.dumps([e.detail for e in acme.memory_audit(ALICE, AuditParams()).events])
    assert "lst_" not in details  # a token's secret never
    bobs = [e.action for e in acme.memory_audit(BOB, AuditParams()).events]
    assert "org.accept" in bobs  # in the new member's own chain
    assert acme.audit_verify(ALICE, NoParams()).ok and acme.audit_verify(BOB, NoParams()).ok


def test_org_bindings_lists_what_routes_to_the_org_for_its_members(acme: LessonService) -> None:
    acme.org_accept(BOB, OrgAcceptParams(code=invite(acme, "bob")))
    acme.org_bind(ALICE, OrgBindParams(org="acme", pattern="project::billing"))
    for member in (ALICE, BOB):  # an admin and a plain member alike
        listed = acme.org_bindings(member, OrgParams(org="acme"))
        assert [(b.pattern, b.pending) for b in listed.bindings] == [
            ("project::billing", False),
            ("repo::acme/*", False),
        ]
    assert code_of(lambda: acme.org_bindings(CAROL, OrgParams(org="acme"))) == "not_found"
    acme.org_unbind(ALICE, OrgBindParams(org="acme", pattern="project::billing"))
    listed = acme.org_bindings(BOB, OrgParams(org="acme")).bindings
    assert [b.pattern for b in listed] == ["repo::acme/*"]
