"""Where the CLI and ``lorestore mcp`` run an operation: on the local store, or, in remote mode
(``LORESTORE_URL`` and ``LORESTORE_TOKEN``), on a server through its REST API."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from lorestore.models import Params, RecallResult, Result
from lorestore.operations import Operation

if TYPE_CHECKING:  # imported by the commands that open a store, not by every CLI start
    from lorestore.auth.actor import Actor
    from lorestore.config import Settings
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
FILE_UNKNOWN = "file_unknown:"


def with_git_context(invoke: Invoke, cwd: str | Callable[[], str]) -> Invoke:
    """Fill a recall's context and a written lesson's provenance from git in ``cwd`` (a
    folder, or what gives the folder of the moment) before the operation runs (locally or
    remotely), never overriding what the caller passed, so that a host needs to pass
    nothing; a recall whose answer holds files the server could not hash is asked again
    with their blobs."""
    from lorestore.gitinfo import GIT_OPERATIONS, fill_from_git

    folder = cwd if callable(cwd) else lambda: cwd

    def invoke_in_context(op: Operation, params: Params) -> Result:
        if op.name not in GIT_OPERATIONS:
            return invoke(op, params)
        data = fill_from_git(op.name, params.model_dump(exclude_none=True), folder())
        result = invoke(op, op.parse(data))
        if isinstance(result, RecallResult):
            return _recall_with_blobs(invoke, op, data, result)
        return result

    return invoke_in_context


def _recall_with_blobs(
    invoke: Invoke, op: Operation, data: dict[str, Any], result: RecallResult
) -> RecallResult:
    """A server cannot hash the client's files, so it holds a ``files`` lesson as
    ``file_unknown:PATH`` when it was not given the blob: hash those files here, in the
    recall's working directory, and recall once more with their blobs. The second answer is
    returned; both recalls are logged, each with its own recall_id."""
    from lorestore.gitinfo import blob_hashes, git_context

    unknown = sorted(
        {
            reason.removeprefix(FILE_UNKNOWN)
            for held in result.held
            for reason in held.reasons
            if reason.startswith(FILE_UNKNOWN)
        }
    )
    cwd = data.get("cwd")
    if not unknown or cwd is None or git_context(cwd) is None:
        return result  # no work tree to hash in: the lessons stay held as unknown
    blobs = {**blob_hashes(cwd, unknown), **(data.get("blobs") or {})}
    again = invoke(op, op.parse({**data, "blobs": blobs}))
    assert isinstance(again, RecallResult)
    return again
