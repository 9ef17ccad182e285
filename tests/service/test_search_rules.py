"""An agent's search decides as recall does, on both backends, through the service: lessons
awaiting the review their scope requires, copies of a value served narrower, the `files`
policy; a named scope off the context's ladder is judged alone (a key there shadows nothing
on the ladder); a token confined to some scopes searches only those rungs. Each withheld
lesson beside one that is served (the control)."""

from __future__ import annotations

from dataclasses import replace

from lorestore.auth.actor import local_actor, local_agent
from lorestore.models import (
    PolicyParams,
    SearchParams,
    VerifyParams,
    WriteParams,
)
from lorestore.service import LessonService

PERSON = local_actor(principal="user:alice", session="p")
AGENT = local_agent(principal="user:alice", session="a")
HERE = {"repo": "acme/app", "branch": "main"}


def write(service: LessonService, scope: str, key: str, value: str, **extra: object) -> None:
    params = WriteParams.model_validate({"scope": scope, "key": key, "value": value, **extra})
    service.memory_write(PERSON, params)


def held(service: LessonService, actor=AGENT, **params: object) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    result = service.memory_search(actor, SearchParams.model_validate(params))
    return {f"{h.lesson.scope}/{h.lesson.key}": h.held for h in result.hits}


def test_unreviewed_and_duplicates_are_withheld_as_recall_does(service: LessonService) -> None:
    service.memory_policy(PERSON, PolicyParams(scope="repo::acme/app", require_review=True))
    write(service, "repo::acme/app", "vetted", "Rotate the deploy keys every quarter.")
    service.memory_verify(PERSON, VerifyParams(scope="repo::acme/app", key="vetted"))
    write(service, "repo::acme/app", "unvetted", "Rotate the deploy keys when someone leaves.")
    write(service, "branch::acme/app::main", "copy", "Deploy keys live in the vault.")
    write(service, "global", "copy-up", "deploy keys live in the VAULT.")
    query = {"query": "deploy keys", **HERE}
    assert held(service, **query) == {
        "repo::acme/app/vetted": [],  # the control: reviewed, served
        "branch::acme/app::main/copy": [],  # the narrowest copy of the value, served
    }
    shown = held(service, **query, include_held=True)
    assert shown["repo::acme/app/unvetted"] == ["unreviewed"]
    assert shown["global/copy-up"] == ["duplicate_of:branch::acme/app::main/copy"]
    assert held(service, PERSON, **query) == shown  # a person sees all, with the reasons


def test_files_policy_holds_a_changed_file(service: LessonService) -> None:
    service.memory_policy(PERSON, PolicyParams(scope="repo::acme/app", revision_policy="files"))
    blob, other = "a" * 40, "b" * 40
    deps = [{"path": "Makefile", "blob": blob}]
    write(service, "repo::acme/app", "make-lint", "Run make lint first.", depends_on=deps)
    same = held(service, query="make lint", **HERE, blobs={"Makefile": blob})
    assert same == {"repo::acme/app/make-lint": []}  # the control: the file as recorded
    assert held(service, query="make lint", **HERE, blobs={"Makefile": other}) == {}
    changed = held(service, query="make lint", **HERE, blobs={"Makefile": other}, include_held=True)
    assert changed == {"repo::acme/app/make-lint": ["file_changed:Makefile"]}


def test_a_scope_off_the_ladder_is_judged_alone(service: LessonService) -> None:
    write(service, "repo::acme/app", "release", "Release the app from the release branch.")
    write(service, "repo::acme/web", "release", "Release the web site from main.")
    write(service, "global", "release", "Release notes go into the changelog.")
    scopes = ["repo::acme/app", "repo::acme/web", "global"]
    found = held(service, query="release", scopes=scopes, **HERE, include_held=True)
    assert found == {
        "repo::acme/app/release": [],
        "repo::acme/web/release": [],  # another repository: it shadows nothing, nor is shadowed
        "global/release": ["shadowed_by:repo::acme/app"],  # on the ladder: shadowed
    }


def test_a_confined_token_searches_only_the_rungs_it_covers(service: LessonService) -> None:
    write(service, "repo::acme/app", "covered", "Deploys need a change ticket.")
    write(service, "global", "uncovered", "Deploys on Fridays need a second reviewer.")
    confined = replace(AGENT, scopes=("repo::acme/*",))
    result = service.memory_search(confined, SearchParams(query="deploys", **HERE))
    assert result.scopes == ["branch::acme/app::main", "repo::acme/app"]
    assert [h.lesson.key for h in result.hits] == ["covered"]
    everywhere = service.memory_search(AGENT, SearchParams(query="deploys", **HERE))
    assert sorted(h.lesson.key for h in everywhere.hits) == ["covered", "uncovered"]
