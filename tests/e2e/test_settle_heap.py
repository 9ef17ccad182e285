"""The long-running servers leave start-up's objects out of the collections each call's garbage
triggers (transports.settle_heap): what was alive is frozen, what was garbage is gone; and
`lorestore serve` (once it listens) and `lorestore mcp` (once its handshake is answered) do it,
as real processes."""

from __future__ import annotations

import gc
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx2
from tests.serving import START_DEADLINE_SECONDS, base_env, free_port

from lorestore.transports import settle_heap
from lorestore.transports.mcp.stdio import SETTLE_AFTER_SECONDS


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_settle_heap_frees_garbage_and_freezes_the_rest() -> None:
    gc.unfreeze()
    kept = Cycle()
    Cycle()  # a cycle no one holds: garbage only a collection frees
    try:
        settle_heap()
        assert gc.get_freeze_count() > 0
        assert gc.get_count()[0] < 50  # the collection just ran
        frozen = gc.get_freeze_count()
        gc.unfreeze()
        assert not any(type(o) is Cycle and o is not kept for o in gc.get_objects())
        assert any(o is kept for o in gc.get_objects())  # the positive control
        assert frozen > 1000  # the interpreter's and the test run's own objects
    finally:
        gc.unfreeze()


# A server run under this probe says at exit how many objects its heap had frozen.
PROBE = (
    "import atexit, gc, sys\n"
    "atexit.register(lambda: print(f'frozen={gc.get_freeze_count()}', file=sys.stderr))\n"
    "sys.argv = ['lorestore', *sys.argv[1:]]\n"
    "from lorestore.cli.entry import main\n"
    "main()\n"
)
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}


def _frozen(stderr: str) -> int:
    found = re.search(r"frozen=(\d+)", stderr)
    assert found, stderr[-2000:]
    return int(found.group(1))


def _stdio_frozen(home: Path, stay: float) -> int:
    """`lorestore mcp` answered its handshake, kept open ``stay`` seconds more, then closed."""
    process = subprocess.Popen(
        [sys.executable, "-c", PROBE, "mcp"],
        env=base_env(home),
        cwd=home.parent,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(INITIALIZE) + "\n")
    process.stdin.flush()
    assert json.loads(process.stdout.readline())["id"] == 1  # serving
    time.sleep(stay)
    process.stdin.close()  # the host leaves: the server ends
    process.wait(timeout=60)
    assert process.stderr is not None
    with process.stdout, process.stderr:
        return _frozen(process.stderr.read())


def test_the_stdio_server_settles_its_heap_after_its_handshake(home: Path) -> None:
    # Closed at once, it never settled (the control: the probe freezes nothing itself) ...
    assert _stdio_frozen(home, 0.0) == 0
    # ... kept open past the delay, it did.
    assert _stdio_frozen(home, SETTLE_AFTER_SECONDS + 2) > 1000


def test_the_http_server_settles_its_heap_once_it_listens(home: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", PROBE, "serve", "--port", str(port), "--no-admin-token"],
        env=base_env(home, LORESTORE_MAINTENANCE_HOURS="off"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + START_DEADLINE_SECONDS  # a broken start, not a timing
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr[-2000:]
    assert _frozen(stderr) > 1000
