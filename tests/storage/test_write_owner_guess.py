"""A write reads what it decides on in the writer's own tenant together with the scope
bindings (service/writes.py, memory_write), and reads it again when a binding routes the scope
to an org: what the writer holds in their own tenant at the same address (a lesson, a
rejected value) never decides an org write, and the org's own rows do. A read guesses the
same way (service/reads.py, memory_read): the reader's own lesson at an org-bound address is
never the answer. On both backends, through the service."""

from __future__ import annotations

import pytest
from tests.conftest import approve_pending

from lorestore.auth.actor import local_actor
from lorestore.core.errors import LorestoreError
from lorestore.models import (
    OrgBindParams,
    OrgCreateParams,
    ReadParams,
    RejectParams,
    WriteParams,
)
from lorestore.service import LessonService
from lorestore.storage.protocol import Store

ALICE = local_actor(principal="user:alice", session="a")
SCOPE, KEY = "repo::acme/app", "deploys"


def _write(service: LessonService, value: str, scope: str = SCOPE) -> str:
    result = service.memory_write(ALICE, WriteParams(scope=scope, key=KEY, value=value))
    return f"{result.result} {result.lesson.owner.key} v{result.lesson.version}"


def test_an_org_write_decides_on_the_orgs_rows_not_the_writers_own(store: Store) -> None:
    service = LessonService(store)
    # Alice's own tenant, before the scope is bound: a lesson at the address, and a value
    # she rejected there.
    assert _write(service, "deploy from main") == "created user:alice v1"
    assert _write(service, "deploy on fridays") == "updated user:alice v2"
    service.memory_reject(ALICE, RejectParams(scope=SCOPE, key=KEY, reason="never on fridays"))
    with pytest.raises(LorestoreError) as refused:  # the control: her tenant refuses it
        _write(service, "deploy on fridays")
    assert refused.value.code == "rejected_value"
    service.org_create(ALICE, OrgCreateParams(slug="acme"))
    service.org_bind(ALICE, OrgBindParams(org="acme", pattern="repo::acme/*"))
    approve_pending(store)
    # The org holds nothing at the address: the write creates there (not a version of hers)
    # and her rejected value is no rejection of the org's.
    assert _write(service, "deploy on fridays") == "created org:acme v1"
    assert _write(service, "deploy from main") == "updated org:acme v2"
    read = service.memory_read(ALICE, ReadParams(scope=SCOPE, key=KEY))
    assert (read.lesson.owner.key, read.lesson.value) == ("org:acme", "deploy from main")
    # The org's own rejection decides its writes.
    service.memory_reject(ALICE, RejectParams(scope=SCOPE, key=KEY, reason="main only"))
    with pytest.raises(LorestoreError) as org_refused:
        _write(service, "deploy from main")
    assert org_refused.value.code == "rejected_value"
    # Her own writes outside the binding still land in her tenant, and what she held at the
    # bound address is as she left it.
    assert _write(service, "deploy from main", scope="repo::alice/dotfiles") == (
        "created user:alice v1"
    )
    with store.transaction(write=False, actor=ALICE.principal) as tx:
        own = tx.lesson_at("user:alice", SCOPE, KEY)
    assert own is not None and (own.lesson.value, own.lesson.version) == ("deploy on fridays", 2)


def test_a_read_of_an_org_bound_address_never_answers_the_readers_own(store: Store) -> None:
    service = LessonService(store)
    assert _write(service, "deploy from main") == "created user:alice v1"
    read = service.memory_read(ALICE, ReadParams(scope=SCOPE, key=KEY))
    assert read.lesson.owner.key == "user:alice"  # the control: before the binding, hers
    service.org_create(ALICE, OrgCreateParams(slug="acme"))
    service.org_bind(ALICE, OrgBindParams(org="acme", pattern="repo::acme/*"))
    approve_pending(store)
    with pytest.raises(LorestoreError) as missing:  # the org holds nothing there
        service.memory_read(ALICE, ReadParams(scope=SCOPE, key=KEY))
    assert missing.value.code == "not_found"
    assert _write(service, "deploy on fridays") == "created org:acme v1"
    read = service.memory_read(ALICE, ReadParams(scope=SCOPE, key=KEY))
    assert (read.lesson.owner.key, read.lesson.value) == ("org:acme", "deploy on fridays")
