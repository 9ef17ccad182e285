"""``lorestore serve --workers N`` as a real process tree, on SQLite and on PostgreSQL as the
application role: each worker listens on a socket of its own on the port, so connections
spread over them; whatever a request relies on from an earlier one (a dashboard session, a
chain verification, the token's request budget) holds whichever worker answers; the
maintenance sweep runs once, in the supervisor; SIGTERM stops every worker and exits 0; a port
something listens on is refused, even by a group of SO_REUSEPORT sockets it could join."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from tests.serving import EXE, Server, base_env, free_port, mcp_client

from lorestore.auth.actor import local_actor
from lorestore.composition import build_service
from lorestore.config import load_settings
from lorestore.models import TokenCreateParams
from lorestore.service.budget import lease_size
from lorestore.web.app import SESSION_COOKIE, SIGNIN_COOKIE

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc; Linux's balance")

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
FRESH = 24  # requests each on a new connection: both workers answer some (P(not) = 2^-23)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: Any, home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment naming the store: SQLite under ``home``, or a PostgreSQL database
    reached as the application role."""
    if request.param == "sqlite":
        return {}
    from tests.migrating import pg_url

    template = request.getfixturevalue("pg_template")
    url = pg_url(template.app_url(request.getfixturevalue("pg_database")))
    monkeypatch.setenv("LORESTORE_DATABASE_URL", url)
    return {"LORESTORE_DATABASE_URL": url}


def mint(permission: str) -> str:
    service = build_service(load_settings())
    params = TokenCreateParams.model_validate({"name": permission, "permission": permission})
    token = service.token_create(local_actor(), params).token
    service.store.close()
    return token


def start(home: Path, *args: str, **env: str) -> Server:
    """``serve --workers 2`` once every worker serves: when the supervisor prints its banner
    (one worker answering /healthz is not yet all of them)."""
    server = Server(home, "--no-admin-token", "--workers", "2", *args, **env)
    assert server.process.stdout is not None
    banner = server.process.stdout.readline()
    if not banner.startswith(f"lorestore serving {server.url} from 2 worker processes"):
        server.stop()
        raise AssertionError(f"no banner: {banner!r}\n{server.stderr}")
    return server


@pytest.fixture
def served(home: Path, backend: dict[str, str]) -> Iterator[Server]:
    server = start(home, **backend)
    try:
        yield server
    finally:
        server.stop()


def children(pid: int) -> list[int]:
    return [
        int(child)
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]


def sockets_of(pid: int) -> set[int]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink().name
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def tcp_sockets(port: int, state: str) -> set[int]:
    """Inodes of the IPv4 TCP sockets whose local port is ``port``, in ``state`` (/proc/net/tcp:
    0A listening, 01 established)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == state:
            found.add(int(fields[9]))
    return found


def held_by_process(server: Server, state: str) -> dict[int, set[int]]:
    """The port's sockets in ``state`` that each child of the server holds (when any)."""
    wanted = tcp_sockets(server.port, state)
    held = {pid: sockets_of(pid) & wanted for pid in children(server.process.pid)}
    return {pid: inodes for pid, inodes in held.items() if inodes}


def test_each_worker_listens_on_its_own_socket_and_connections_spread(served: Server) -> None:
    token = mint("write")
    listening = list(held_by_process(served, "0A").values())
    assert len(listening) == 2 and [len(inodes) for inodes in listening] == [1, 1]
    assert not listening[0] & listening[1]  # a socket each, not one shared
    clients = [served.rest(token) for _ in range(16)]
    try:
        for n, client in enumerate(clients):
            body = {"scope": "global", "key": f"k{n}", "value": f"lesson {n}"}
            assert client.post("/api/v1/memory_write", json=body).status_code == 200
        connected = held_by_process(served, "01")
        assert sum(len(inodes) for inodes in connected.values()) == 16
        assert len(connected) == 2, connected  # both workers serve some of the clients
        for n, client in enumerate(clients):  # any worker reads what any wrote
            read = client.post("/api/v1/memory_read", json={"scope": "global", "key": f"k{n}"})
            assert read.json()["lesson"]["value"] == f"lesson {n}"
    finally:
        for client in clients:
            client.close()


def test_mcp_sessions_write_and_read_whichever_worker_answers(served: Server) -> None:
    token = mint("write")

    async def session(n: int) -> Any:
        async with mcp_client(served.url, token) as client:
            args = {"scope": "global", "key": f"mcp-{n}", "value": f"written over MCP {n}"}
            assert not (await client.call_tool("memory_write", args)).is_error
        async with mcp_client(served.url, token) as client:  # another connection
            read = await client.call_tool("memory_read", {"scope": "global", "key": f"mcp-{n}"})
            return (read.structured_content or {})["lesson"]["value"]

    async def sessions() -> list[Any]:
        return [await session(n) for n in range(8)]

    # 16 MCP sessions, each on a connection of its own: both workers answer some of them
    # (P(not) = 2^-15, as the spread of REST clients above).
    assert anyio.run(sessions) == [f"written over MCP {n}" for n in range(8)]


def fresh(server: Server, method: str, path: str, session: str, **kw: Any) -> httpx2.Response:
    """One request on a new connection (so any worker may take it) with the session cookie."""
    with httpx2.Client(base_url=server.url, cookies={SESSION_COOKIE: session}) as client:
        return client.request(method, path, follow_redirects=False, **kw)


def sign_in(server: Server, token: str) -> str:
    with httpx2.Client(base_url=server.url) as client:
        form = client.get("/signin")
        found = CSRF.search(form.text)
        assert found and client.cookies.get(SIGNIN_COOKIE)
        data = {"token": token, "csrf_token": found.group(1), "next": "/overview"}
        answer = client.post("/signin", data=data, follow_redirects=False)
        assert answer.status_code == 303, answer.text
        session = client.cookies.get(SESSION_COOKIE)
        assert session
        return str(session)


def test_a_dashboard_session_and_its_verification_hold_on_every_worker(served: Server) -> None:
    session = sign_in(served, mint("admin"))
    pages = [fresh(served, "GET", "/overview", session) for _ in range(FRESH)]
    assert [p.status_code for p in pages] == [200] * FRESH
    assert fresh(served, "GET", "/overview", "not-a-session").status_code == 303  # control

    audit = fresh(served, "GET", "/audit", session)
    assert "Verify the hash chains</button>" in audit.text  # none asked for yet
    csrf = CSRF.search(audit.text)
    assert csrf
    asked = fresh(served, "POST", "/audit/verify", session, data={"csrf_token": csrf.group(1)})
    assert asked.status_code == 303, asked.text
    for _ in range(FRESH):  # every worker shows the run, running or done
        text = fresh(served, "GET", "/audit", session).text
        assert "Verifying the hash chains, since" in text or "Verify again" in text

    csrf = CSRF.search(pages[0].text)
    assert csrf
    out = fresh(served, "POST", "/signout", session, data={"csrf_token": csrf.group(1)})
    assert out.status_code == 303 and out.headers["location"] == "/signin?out=1"
    ended = [fresh(served, "GET", "/overview", session) for _ in range(FRESH)]
    assert [p.status_code for p in ended] == [303] * FRESH  # signed out on every worker
    assert {p.headers["location"] for p in ended} == {"/signin?next=/overview"}


def test_a_tokens_request_budget_is_one_across_workers(home: Path, backend: dict[str, str]) -> None:
    limit, workers = 20, 2
    server = start(home, LORESTORE_RATE_LIMIT=str(limit), **backend)
    try:
        for _ in range(3):  # a run that crosses into the next minute (a new budget) again
            token, began = mint("read"), time.gmtime().tm_min
            statuses = Counter(
                server.call("POST", "/api/v1/token_current", token, json={}).status_code
                for _ in range(2 * limit)
            )
            if time.gmtime().tm_min == began:
                break
    finally:
        server.stop()
    assert statuses[200] + statuses[429] == 2 * limit, statuses
    # The limit, not one per worker; and no fewer than service/budget.py promises.
    assert limit - (workers - 1) * (lease_size(limit) - 1) <= statuses[200] <= limit, statuses


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_maintenance_runs_once_and_a_signal_stops_every_worker(
    home: Path, backend: dict[str, str], stop: signal.Signals
) -> None:
    server = start(home, "--log-format", "json", LORESTORE_MAINTENANCE_HOURS="24", **backend)
    spawned = [  # multiprocessing's resource tracker, which outlives its parent a moment, aside
        pid
        for pid in children(server.process.pid)
        if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    assert len(spawned) == 3  # two workers and the dashboard's state
    assert server.stop(stop) == 0
    assert not [pid for pid in spawned if Path(f"/proc/{pid}").exists()]
    events = [r.get("event") for r in server.log_records()]
    assert events.count("maintenance") == 1, events
    assert events.count("Application shutdown complete.") == 2  # each worker finished


def test_a_worker_that_dies_is_replaced_on_its_socket(served: Server) -> None:
    token = mint("read")
    before = held_by_process(served, "0A")
    victim, its_socket = next(iter(before.items()))
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 60  # a deadline for a broken supervisor, not a timing
    while (after := held_by_process(served, "0A")).keys() == before.keys() or len(after) < 2:
        assert time.monotonic() < deadline, f"no worker replaced {victim}: {after}"
        time.sleep(0.1)
    assert victim not in after
    assert its_socket in after.values()  # the new worker listens on the dead one's socket
    answers = [
        served.call("POST", "/api/v1/token_current", token, json={}).status_code
        for _ in range(FRESH)
    ]
    assert answers == [200] * FRESH


def test_a_port_a_reuse_port_group_listens_on_is_refused(home: Path) -> None:
    port = free_port()
    with socket.socket() as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        other.bind(("127.0.0.1", port))
        other.listen()
        run = subprocess.run(
            [EXE, "serve", "--port", str(port), "--workers", "2"],
            env=base_env(home),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert run.returncode == 1, run.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in run.stderr
    assert "lorestore serving" not in run.stdout and "lst_" not in run.stdout


@pytest.mark.parametrize("workers", ["0", "65"])
def test_a_worker_count_out_of_range_is_a_usage_error(home: Path, workers: str) -> None:
    run = subprocess.run(
        [EXE, "serve", "--port", str(free_port()), "--workers", workers],
        env=base_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and "--workers" in run.stderr, run.stderr
