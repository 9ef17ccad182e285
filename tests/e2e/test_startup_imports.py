"""What ``lorestore`` imports before it knows which command runs. The start-up times are in
benchmarks/startup_bench.py; this checks the mechanism behind them, each case in a fresh
interpreter through the real entry point: the command tree loads no transport, database
driver, store or Rich, and the commands that need them (the positive controls) do load them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

# Imported where they are used, never by the command tree itself.
LAZY = (
    "mcp",
    "mcp_types",
    "starlette",
    "uvicorn",
    "httpx2",
    "psycopg",
    "rich.console",
    "lorestore.service",
    "lorestore.storage",
    "lorestore.transports",
    "lorestore.evaluation",
    "lorestore.gitinfo",
    # The semantic extra's model and numpy: loaded by the first write or recall with a task.
    "numpy",
    "tokenizers",
    "wordllama",
)

# argv[1]: the command line as JSON (null: only import the command tree); argv[2]: where the
# loaded modules are listed.
_SCRIPT = """
import json, sys
args, listing = json.loads(sys.argv[1]), sys.argv[2]
if args is None:
    import lorestore.cli.main
else:
    sys.argv = ["lorestore", *args]
    from lorestore.cli.entry import main
    try:
        main()
    except SystemExit:
        pass
with open(listing, "w") as out:
    json.dump(sorted(sys.modules), out)
"""


def _env(home: Path) -> dict[str, str]:
    """This environment without lorestore's settings, on the embedded store in ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORESTORE_")}
    return env | {"LORESTORE_HOME": str(home)}


def _loaded(home: Path, args: list[str] | None, stdin: str | None = None) -> set[str]:
    """The modules a fresh interpreter holds after running ``lorestore ARGS`` (None: after
    importing the command tree), on the embedded store in ``home``, ``stdin`` its input."""
    listing = home.parent / "modules.json"  # home itself is made by the store, if at all
    env = _env(home)
    subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(args), str(listing)],
        env=env,
        # Without input `lorestore mcp` ends at once: the host has gone.
        **({"input": stdin.encode()} if stdin is not None else {"stdin": subprocess.DEVNULL}),
        capture_output=True,
        check=True,
        timeout=120,
    )
    return set(json.loads(listing.read_text()))


def _present(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """Those of ``names`` loaded, as packages (a sub-module counts)."""
    return [n for n in names if n in modules or any(m.startswith(n + ".") for m in modules)]


def test_the_command_tree_imports_no_transport_store_or_rich(home: Path) -> None:
    loaded = _loaded(home, None)
    assert "lorestore.operations" in loaded  # the control: the catalog is there
    assert _present(loaded, LAZY) == []


def test_version_imports_neither_typer_nor_pydantic(home: Path) -> None:
    loaded = _loaded(home, ["--version"])
    assert "lorestore.cli.entry" in loaded
    assert _present(loaded, ("typer", "pydantic", "lorestore.models")) == []


def test_help_lists_the_commands_without_typer_the_catalog_or_its_models(home: Path) -> None:
    catalog = ("lorestore.operations", "lorestore.models", "pydantic")
    # Typer's help renderer imports Rich's Markdown, traceback and syntax modules, none of
    # which the page uses (cli/toppage.py).
    typer = ("typer", "rich.markdown", "rich.traceback", "rich.syntax")
    for args in (["--help"], []):
        loaded = _loaded(home, args)
        assert "lorestore.cli.toppage" in loaded  # the control that it ran: the page's module
        # Rich renders the page: the one lazy module it needs.
        lazy = (n for n in LAZY if n != "rich.console")
        assert _present(loaded, (*catalog, *typer, *lazy)) == []
    # The control: a command's own page builds the tree, from the catalog, and renders with
    # Typer.
    renderer = ("typer", "rich.markdown")
    assert _present(_loaded(home, ["read", "--help"]), catalog + renderer) == [*catalog, *renderer]


def test_read_opens_the_embedded_store_without_a_transport(home: Path) -> None:
    loaded = _loaded(home, ["read", "global", "nothing-here"])
    store = ("lorestore.service", "lorestore.storage.sqlite", "rich.console")
    assert _present(loaded, store) == list(store)
    assert _present(loaded, ("mcp", "mcp_types", "starlette", "uvicorn", "httpx2", "psycopg")) == []


def test_mcp_imports_the_sdk_and_not_the_driver(home: Path) -> None:
    loaded = _loaded(home, ["mcp"])
    sdk = ("mcp", "mcp_types", "starlette", "lorestore.transports.mcp")
    assert _present(loaded, sdk) == list(sdk)
    assert _present(loaded, ("psycopg", "lorestore.evaluation")) == []


def _mcp_session(home: Path, *requests: tuple[str, dict[str, object]]) -> tuple[set[str], str]:
    """``lorestore mcp`` given a host's handshake and ``requests`` (method, params), its input
    closed once every request is answered (as a host does): the modules it loaded, and what
    it answered."""

    def message(n: int, method: str, params: dict[str, object]) -> str:
        return json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params})

    hello = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    lines = [
        message(1, "initialize", hello),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        *(message(n, method, params) for n, (method, params) in enumerate(requests, 2)),
    ]
    listing = home.parent / "modules.json"
    env = _env(home)
    child = subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, json.dumps(["mcp"]), str(listing)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    stuck = threading.Timer(120, child.kill)  # a server that never answers ends the test
    stuck.start()
    try:
        child.stdin.write("\n".join(lines) + "\n")
        child.stdin.flush()
        answers = [child.stdout.readline() for _ in range(1 + len(requests))]
        child.communicate(timeout=120)
    finally:
        stuck.cancel()
    return set(json.loads(listing.read_text())), "".join(answers)


def test_mcp_lists_its_tools_before_it_loads_the_catalog(home: Path) -> None:
    """A host waits for `tools/list` at every session start: it is answered from
    schemas.json, with the store open (a store it cannot use is refused before the handshake)
    and without the catalog's models and the service, which the first call loads."""
    listed, answers = _mcp_session(home, ("tools/list", {}))
    assert '"memory_recall"' in answers  # listed
    assert "lorestore.storage.sqlite" in listed  # the store was opened
    assert _present(listed, ("lorestore.models", "lorestore.service.lessons")) == []
    call = {"name": "memory_read", "arguments": {"scope": "global", "key": "nothing-here"}}
    called, answers = _mcp_session(home, ("tools/list", {}), ("tools/call", call))
    assert "no active lesson" in answers  # the control: a call ran, on the models
    assert _present(called, ("lorestore.models", "lorestore.service.lessons")) == [
        "lorestore.models",
        "lorestore.service.lessons",
    ]


def test_mcp_as_hosts_start_it_skips_the_command_tree(home: Path) -> None:
    assert "typer" not in _loaded(home, ["mcp"])
    assert "typer" in _loaded(home, ["mcp", "--announce"])  # the control: options go to the tree


def test_mcp_reports_a_bad_setting_the_same_way_on_both_paths(home: Path) -> None:
    env = _env(home) | {"LORESTORE_DATABASE_URL": "mysql://db/lessons"}
    lorestore = str(Path(sys.executable).with_name("lorestore"))
    short, tree = (
        subprocess.run(
            [lorestore, *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True
        )
        for args in (["mcp"], ["mcp", "--allow-person-token"])
    )
    assert "config_error" in short.stderr and short.stdout == ""
    assert (short.returncode, short.stderr) == (tree.returncode, tree.stderr) == (1, tree.stderr)


def test_the_semantic_model_loads_for_a_recall_with_a_task_not_in_a_hook(home: Path) -> None:
    semantic = ("numpy", "tokenizers", "safetensors")
    assert _present(_loaded(home, ["read", "global", "nothing-here"]), semantic) == []
    recalled = _loaded(home, ["recall", "--task", "postgresql"])
    assert _present(recalled, semantic) == list(semantic)  # the control: hybrid recall
    # The model's files are read without wordllama's loader, whose package imports requests.
    assert _present(recalled, ("wordllama", "requests")) == []
    # A prompt hook recalls for the prompt's text too, lexically: no model in its process.
    prompt = json.dumps(
        {
            "session_id": "s1",
            "hook_event_name": "UserPromptSubmit",
            "cwd": str(home.parent),
            "prompt": "postgresql database",
        }
    )
    hooked = _loaded(home, ["hook", "prompt", "--host", "claude-code"], stdin=prompt)
    assert "lorestore.service" in hooked  # it did recall
    assert _present(hooked, semantic) == []


def test_a_session_start_hook_loads_neither_the_capture_nor_the_sweeps(home: Path) -> None:
    """The GitHub capture's event parsing and filters and the maintenance sweeps' models are
    loaded by the service methods that use them, not by every process that opens a store."""
    start = json.dumps(
        {"session_id": "s2", "hook_event_name": "SessionStart", "cwd": str(home.parent)}
    )
    hooked = _loaded(home, ["hook", "session-start", "--host", "claude-code"], stdin=start)
    assert "lorestore.service.recaller" in hooked  # the control: it recalled (service/recaller.py)
    later = ("lorestore.ingest.events", "lorestore.ingest.signal", "lorestore.service.maintenance")
    assert _present(hooked, later) == []
    swept = _loaded(home, ["maintain"])  # the control: a command that runs the sweeps
    assert _present(swept, ("lorestore.service.maintenance",)) == ["lorestore.service.maintenance"]


def test_a_session_start_hook_imports_no_pydantic(home: Path) -> None:
    """A host starts the hook as a cold process at every session: it recalls on plain values
    (service/recaller.py), without the operations' models or the record models."""
    start = json.dumps(
        {"session_id": "s3", "hook_event_name": "SessionStart", "cwd": str(home.parent)}
    )
    hooked = _loaded(home, ["hook", "session-start", "--host", "claude-code"], stdin=start)
    assert "lorestore.service.recaller" in hooked  # the control: it recalled
    models = ("pydantic", "pydantic_core", "lorestore.models", "lorestore.core.records")
    assert _present(hooked, models) == []
    # The control: the CLI's recall, the same recall behind memory_recall, validates with them.
    recalled = _loaded(home, ["recall"])
    assert _present(recalled, models) == list(models)
