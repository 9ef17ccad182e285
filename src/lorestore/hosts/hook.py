"""``lorestore hook EVENT --host H``: what a host's lifecycle hook runs (docs/hosts.md).

It reads the host's JSON on stdin and answers in the host's shape (events.py): at session
start, the lessons recalled for the working directory's repository, branch and commit; at a
prompt, those recalled for its text that this session was not already given; after the same
command failed again, the lessons matching the failure and a nudge to record the fix; at stop,
after failures that ended in success, a nudge to write a lesson (never a lesson itself).

A hook never breaks its host: bad input, a locked store, a server that is down or refuses the
token all answer the host's empty result, within the deadline (a watchdog answers for a hook
that would overrun it), and the cause goes to ``hooks.log`` in the store's home. Started as a
cold process for every event, it imports only what an event needs: the store, the catalog and
git only for the events that recall, nothing of Typer or the MCP SDK."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from lorestore.hosts import HOSTS
from lorestore.hosts.events import EVENTS, Payload, answer, empty_answer, parse_payload, session_key

if TYPE_CHECKING:
    from lorestore.auth.actor import Actor
    from lorestore.config import Settings
    from lorestore.core.recall import LessonHead

# The hooks install writes give the host a 10 s timeout; the watchdog answers well before.
DEADLINE_S = 5.0
MAX_INPUT_BYTES = 4 * 1024 * 1024
REPEATED_AT = 2  # a failure seen this many times in a session is "repeated"
BUDGETS = {"session-start": 1500, "prompt": 800, "tool-failure": 600, "tool-done": 600}
SESSION_FILES_KEPT_S = 7 * 24 * 3600
LOG_FILE = "hooks.log"
USAGE = (
    "usage: lorestore hook EVENT --host HOST\n"
    f"  EVENT: {', '.join(EVENTS)}\n  HOST:  {', '.join(HOSTS)}\n"
    "reads the host's hook JSON on stdin and answers in the host's format (docs/hosts.md)"
)


class Recall(NamedTuple):
    """What a hook reads of a recall, made on the embedded store or by a server."""

    recall_id: str
    repo: str | None
    branch: str | None
    revision: str | None
    offered: list[LessonHead]
    held: list[list[str]]  # the reasons of each lesson held back
    not_considered: list[str]
    text: str  # the fenced block of the lessons offered


class _Answer:
    """The one answer a hook prints: the first of the handler's and the watchdog's."""

    def __init__(self, host: str, event: str) -> None:
        self.host, self.event = host, event
        self._lock = threading.Lock()
        self._done = False

    def give(self, result: dict[str, Any]) -> bool:
        with self._lock:
            if self._done:
                return False
            self._done = True
            sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
            sys.stdout.flush()
            return True


def parse_args(argv: list[str]) -> tuple[str, str] | None:
    """(event, host) from ``EVENT --host HOST`` (either order), None when unusable."""
    event = host = None
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--host" and rest:
            host = rest.pop(0)
        elif arg.startswith("--host="):
            host = arg.split("=", 1)[1]
        elif event is None and not arg.startswith("-"):
            event = arg
        else:
            return None
    if event not in EVENTS or host not in HOSTS:
        return None
    return event, host


def main(argv: list[str]) -> None:
    """The hook as the host runs it: always a valid answer on stdout and exit status 0; a
    command line that names no event or host exits 1 (the host shows it, and goes on)."""
    parsed = parse_args(argv)
    if parsed is None:
        print(USAGE, file=sys.stderr)
        raise SystemExit(1)
    event, host = parsed
    out = _Answer(host, event)

    def overrun() -> None:
        if out.give(empty_answer(host, event)):
            _log(host, event, f"no answer within {DEADLINE_S:g} s: answered empty")
            os._exit(0)

    watchdog = threading.Timer(DEADLINE_S, overrun)
    watchdog.daemon = True
    watchdog.start()
    try:
        context = run(host, event, sys.stdin.buffer.read(MAX_INPUT_BYTES))
    except BaseException as exc:
        _log(host, event, f"{type(exc).__name__}: {exc}")
        context = None
    out.give(answer(host, event, context) if context else empty_answer(host, event))
    watchdog.cancel()


def run(host: str, event: str, raw: bytes) -> str | None:
    """The context to give the agent for this event, or None."""
    payload = parse_payload(host, event, json.loads(raw.decode("utf-8") or "null"))
    state = SessionState.load(host, payload.session)
    if event == "session-start":
        state.prune_others()
        return _session_start(payload, state)
    if event == "prompt":
        return _prompt(payload, state)
    if event in ("tool-failure", "tool-done"):
        return _tool(payload, state)
    return _stop(payload, state)


class SessionState:
    """What a hook remembers of one host session, in the store's home: the lessons it was
    given, the failures seen (per command and per failed test), those that later succeeded,
    and whether it was nudged at stop."""

    def __init__(self, path: Path | None, data: dict[str, Any]) -> None:
        self.path = path
        self.given: list[str] = list(data.get("given", []))
        self.failures: dict[str, int] = dict(data.get("failures", {}))
        self.resolved: list[str] = list(data.get("resolved", []))
        self.nudged: bool = bool(data.get("nudged", False))

    @classmethod
    def load(cls, host: str, session: str) -> SessionState:
        if not session:
            return cls(None, {})  # no session id: nothing to remember between events
        path = _home() / "hooks" / f"{session_key(host, session)}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        return cls(path, data if isinstance(data, dict) else {})

    def save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = {
            "given": self.given[-500:],
            "failures": dict(list(self.failures.items())[-200:]),
            "resolved": self.resolved[-100:],
            "nudged": self.nudged,
        }
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, self.path)

    def prune_others(self) -> None:
        """Forget sessions untouched for a week (at each session start)."""
        if self.path is None:
            return
        cutoff = time.time() - SESSION_FILES_KEPT_S
        with contextlib.suppress(OSError):
            for other in self.path.parent.glob("*.json"):
                if other != self.path and other.stat().st_mtime < cutoff:
                    other.unlink()


def _session_start(payload: Payload, state: SessionState) -> str | None:
    result = _recall(payload, task=None, budget=BUDGETS["session-start"])
    ids = [_given_id(lesson.id, lesson.version) for lesson in result.offered]
    state.given = [*state.given, *(i for i in ids if i not in state.given)]
    state.save()
    where = result.repo or "no repository"
    if result.repo and result.branch:
        where += f" on {result.branch}"
    if result.revision:
        where += f" at {result.revision[:12]}"
    line = f"lorestore: {len(result.offered)} lesson(s) recalled for {where}"
    held = held_summary(result)
    if held:
        line += f"; {held}"
    if not result.offered:
        return (
            f"{line}. None apply yet: search (memory_search) before writing, and record a "
            "lesson (memory_write) when something here cost you time."
        )
    return f"{line}.\n{result.text}"


def held_summary(result: Recall) -> str:
    """The held lessons in one line: how many, by reason (the first of each)."""
    if not result.held:
        return ""
    counts: dict[str, int] = {}
    for reasons in result.held:
        reason = reasons[0].split(":", 1)[0] if reasons else "held"
        counts[reason] = counts.get(reason, 0) + 1
    parts = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items(), key=_by_count))
    return f"held back {len(result.held)} ({parts})"


def _by_count(item: tuple[str, int]) -> tuple[int, str]:
    return -item[1], item[0]


def _prompt(payload: Payload, state: SessionState) -> str | None:
    if payload.host == "cursor":
        return None  # beforeSubmitPrompt cannot add context: nothing to recall for
    text = (payload.prompt or "").strip()
    if len(text.split()) < 2:
        return None
    result = _recall(payload, task=text[:2000], budget=BUDGETS["prompt"])
    fresh = [
        lesson
        for lesson in result.offered
        if _given_id(lesson.id, lesson.version) not in state.given
    ]
    if not fresh:
        return None
    state.given += [_given_id(lesson.id, lesson.version) for lesson in fresh]
    state.save()
    return f"lorestore: {len(fresh)} more lesson(s) for this prompt.\n" + _fence(result, fresh)


def _tool(payload: Payload, state: SessionState) -> str | None:
    signature = payload.signature
    if signature is None:
        return None
    if not payload.failed:
        # A success: only a command that failed before matters, and nothing is recalled.
        if signature in state.failures and signature not in state.resolved:
            state.resolved.append(signature)
            state.save()
        return None
    keys = [signature, *(f"test: {t}" for t in payload.failed_tests())]
    for key in keys:
        state.failures[key] = state.failures.get(key, 0) + 1
    if signature in state.resolved:
        state.resolved.remove(signature)
    state.save()
    repeated = [(key, state.failures[key]) for key in keys if state.failures[key] >= REPEATED_AT]
    if not repeated:
        return None
    key, times = repeated[0]  # the command itself when it repeats, else a failed test
    task = "\n".join(p for p in (payload.command, (payload.error or "")[:600]) if p)
    result = _recall(payload, task=task, budget=BUDGETS["tool-failure"])
    if key == signature:
        shown = f"`{(payload.command or payload.tool or 'this command')[:120]}`"
    else:
        shown = f"test `{key.removeprefix('test: ')}`"
    nudge = (
        f"lorestore: {shown} has failed {times} times in this session. When you find what "
        "fixes it, search (memory_search) and record the fix as a lesson (memory_write)."
    )
    if not result.offered:
        return nudge
    return f"{nudge}\nLessons that match the failure:\n{result.text}"


def _stop(payload: Payload, state: SessionState) -> str | None:
    if payload.stop_active or state.nudged or not state.resolved:
        return None
    state.nudged = True
    state.save()
    fixed = "; ".join(f"`{s.split(': ', 1)[-1][:80]}`" for s in state.resolved[-3:])
    return (
        f"lorestore: this session had failures that ended in success ({fixed}). If the fix "
        "would save the next agent time, search lorestore (memory_search) and record it as a "
        "lesson (memory_write) with the narrowest scope it holds for; otherwise stop."
    )


def _given_id(lesson_id: str, version: int) -> str:
    return f"{lesson_id}@{version}"


def _fence(result: Recall, offered: list[LessonHead]) -> str:
    """The fenced block of ``result`` with only ``offered`` in it."""
    from lorestore.core.recall import render_fence

    return render_fence(
        result.recall_id, offered, result.not_considered, repository_known=result.repo is not None
    )


def _recall(payload: Payload, *, task: str | None, budget: int) -> Recall:
    """Recall in the payload's working directory, as an agent of the host's session, on the
    embedded store or (LORESTORE_URL, LORESTORE_TOKEN) a server, whose token must be an
    agent's: a person's review or admin token is refused as ``lorestore mcp`` refuses it."""
    from lorestore.gitinfo import read_ahead

    cwd = payload.cwd if payload.cwd and os.path.isdir(payload.cwd) else os.getcwd()
    read_ahead(cwd)  # git answers while the store's modules load

    from dataclasses import replace

    from lorestore.auth.actor import local_agent
    from lorestore.config import load_settings

    # Lexical on a local store: a hook is a process of its own per event, within the host's
    # deadline, and the semantic model's first load (numpy, the tokenizer, the weights) costs
    # about a fifth of a second, on every prompt (docs/hosts.md). A server decides for itself.
    settings = replace(load_settings(use_login=False), semantic=False)
    session = f"{payload.host}-{payload.session or 'unknown'}"
    if settings.session:
        session = settings.session
    actor = local_agent(principal=settings.principal, session=session, agent=payload.host)
    arguments: dict[str, Any] = {"budget": budget}
    if task:
        arguments["task"] = task
    if settings.remote:
        return _remote_recall(settings, actor, arguments, cwd)
    # The embedded store: recall alone, on plain values (service/recaller.py), the same
    # recall memory_recall runs, without the service's other operations or pydantic.
    from lorestore.composition import build_recall
    from lorestore.gitinfo import fill_from_git
    from lorestore.service.recaller import RecallRequest

    recaller = build_recall(settings, local_files=True)
    try:
        request = RecallRequest.of(fill_from_git("memory_recall", arguments, cwd))
        recalled = recaller.recall_lessons(actor, request)
    finally:
        recaller.store.close()
    context = recalled.context
    return Recall(
        recall_id=recalled.recall_id,
        repo=context["repo"],
        branch=context["branch"],
        revision=context["revision"],
        offered=[d.candidate.lesson for d in recalled.offered],
        held=[list(d.reasons) for d in recalled.held],
        not_considered=recalled.not_considered,
        text=recalled.text,
    )


def _remote_recall(settings: Settings, actor: Actor, arguments: dict[str, Any], cwd: str) -> Recall:
    """memory_recall on a server, its context and files' blobs from git here."""
    from lorestore.cli.backend import open_backend, with_git_context
    from lorestore.core.recall import head_of
    from lorestore.models import RecallResult
    from lorestore.operations import BY_NAME
    from lorestore.transports.mcp.stdio import bridged_permissions

    backend = open_backend(settings, actor)
    try:
        bridged_permissions(backend.invoke, allow_person_token=False)
        op = BY_NAME["memory_recall"]
        result = with_git_context(backend.invoke, cwd)(op, op.parse(arguments))
    finally:
        backend.close()
    assert isinstance(result, RecallResult)
    return Recall(
        recall_id=result.recall_id,
        repo=result.context.repo,
        branch=result.context.branch,
        revision=result.context.revision,
        offered=[head_of(o.lesson) for o in result.offered],
        held=[list(h.reasons) for h in result.held],
        not_considered=result.not_considered,
        text=result.text,
    )


def _home() -> Path:
    from lorestore.config import home_path

    return home_path()


def _log(host: str, event: str, message: str) -> None:
    """One line in the store's home ``hooks.log``; a log that cannot be written is skipped."""
    with contextlib.suppress(Exception):
        home = _home()
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        line = " ".join(message.split())[:2000]
        with open(home / LOG_FILE, "a", encoding="utf-8") as log:
            log.write(f"{stamp} {host} {event}: {line}\n")
