"""Where the CLI and ``lorestore mcp`` run an operation: on the local store, or, in remote mode
(``LORESTORE_URL`` and ``LORESTORE_TOKEN``), on a server through its REST API."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from lorestore.auth.actor import Actor
from lorestore.config import Settings
from lorestore.gitinfo import GIT_OPERATIONS, fill_from_git
from lorestore.models import Params, Result
from lorestore.operations import Operation
from lorestore.service import LessonService


class Backend(Protocol):
    def invoke(self, op: Operation, params: Params) -> Result: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class LocalBackend:
    service: LessonService
    actor: Actor

    def invoke(self, op: Operation, params: Params) -> Result:
        return op.invoke(self.service, self.actor, params)

    def close(self) -> None:
        self.service.store.close()


def open_backend(settings: Settings, actor: Actor) -> Backend:
    """``actor`` acts on the local store; remotely the token decides who acts, and the actor's
    session and agent name travel along so recurrence and provenance stay the same."""
    if settings.url is not None and settings.token is not None:
        from lorestore.transports.http.client import RemoteClient

        return RemoteClient(settings.url, settings.token, session=actor.session, agent=actor.agent)
    from lorestore.composition import build_service

    return LocalBackend(build_service(settings, local_files=True), actor)


Invoke = Callable[[Operation, Params], Result]


def with_git_context(invoke: Invoke, cwd: str) -> Invoke:
    """Fill a recall's context and a written lesson's provenance from git in ``cwd`` before
    the operation runs (locally or remotely), never overriding what the caller passed, so
    that a host needs to pass nothing."""

    def invoke_in_context(op: Operation, params: Params) -> Result:
        if op.name not in GIT_OPERATIONS:
            return invoke(op, params)
        data = params.model_dump(exclude_none=True)
        return invoke(op, op.parse(fill_from_git(op.name, data, cwd)))

    return invoke_in_context
