"""One catalog, every surface: parity of CLI commands and MCP tools with the catalog, and the
documentation kept true (a setting, tool or command that is undocumented fails here)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pydantic
import pytest
import typer

import lorestore.cli
from lorestore.cli.main import app
from lorestore.cli.reference import render, render_index
from lorestore.config import DOCUMENTED_VARIABLES
from lorestore.operations import CATALOG, on_surface
from lorestore.transports.mcp import server
from lorestore.transports.mcp.server import result_schema, tool_definitions

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _commands() -> dict[tuple[str | None, str], Any]:
    group: Any = typer.main.get_command(app)
    ctx = group.context_class(group)
    found: dict[tuple[str | None, str], Any] = {}
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if hasattr(command, "list_commands"):
            if any(p.name != "help" for p in command.params):
                found[(None, name)] = command  # the group's own action (`lorestore audit`)
            sub_ctx = command.context_class(command)
            for sub in command.list_commands(sub_ctx):
                found[(name, sub)] = command.get_command(sub_ctx, sub)
        else:
            found[(None, name)] = command
    return found


def test_every_cli_operation_is_a_command_with_every_field() -> None:
    commands = _commands()
    for op in on_surface("cli"):
        command = commands[(op.cli_group, op.cli_name)]
        names = {p.name for p in command.params}
        for field in op.params.model_fields:
            if field == "source":
                assert {"source_agent", "source_commit", "source_repo"} <= names
            else:
                assert field in names, f"{op.cli_name} lacks {field}"
        assert "json_output" in names


def test_mcp_tools_are_exactly_the_mcp_operations() -> None:
    tools = {t.name: t for t in tool_definitions()}
    assert list(tools) == [op.name for op in on_surface("mcp")]
    stale = "src/lorestore/transports/mcp/schemas.json is stale: " + REGENERATE_SCHEMAS
    for op in on_surface("mcp"):
        assert tools[op.name].input_schema == op.params.model_json_schema(), stale
        assert tools[op.name].output_schema == result_schema(op.result), stale


REGENERATE_SCHEMAS = (
    "run `python -m lorestore.transports.mcp.server > src/lorestore/transports/mcp/schemas.json`"
)


def test_the_kept_tool_schemas_are_generated_from_the_models() -> None:
    """What `tools/list` answers from (transports/mcp/server.py), without building a schema."""
    kept = Path(server.__file__).with_name("schemas.json").read_text(encoding="utf-8")
    assert kept == server.render_schemas(), f"schemas.json is stale: {REGENERATE_SCHEMAS}"


def test_listing_the_tools_builds_no_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a schema was built")

    monkeypatch.setattr(pydantic.BaseModel, "model_json_schema", refuse)
    assert len(tool_definitions()) == len(on_surface("mcp"))
    with pytest.raises(AssertionError, match="a schema was built"):  # the control
        server.tool_entry(on_surface("mcp")[0])


def test_service_implements_every_operation() -> None:
    from lorestore.service import LessonService

    for op in CATALOG:
        assert callable(getattr(LessonService, op.name, None)), op.name


def test_cli_reference_is_generated_from_the_commands() -> None:
    assert (DOCS / "cli.md").read_text() == render(), (
        "docs/cli.md is stale: run `python -m lorestore.cli.reference > docs/cli.md`"
    )


def test_the_index_of_commands_is_generated_from_the_commands() -> None:
    """What `lorestore --help` lists without building the tree (cli/root.py)."""
    index = Path(lorestore.cli.__file__).with_name("index.json")
    assert index.read_text(encoding="utf-8") == render_index(), (
        "src/lorestore/cli/index.json is stale: run "
        "`python -m lorestore.cli.reference --index > src/lorestore/cli/index.json`"
    )


def test_every_tool_is_documented() -> None:
    text = (DOCS / "mcp.md").read_text()
    for op in on_surface("mcp"):
        assert f"`{op.name}`" in text, op.name


def test_every_setting_is_documented_and_read_only_in_config() -> None:
    text = (DOCS / "configuration.md").read_text()
    for name in DOCUMENTED_VARIABLES:
        assert f"`{name}`" in text, name
    read = set()
    for path in (ROOT / "src" / "lorestore").rglob("*.py"):
        source = path.read_text()
        found = set(re.findall(r"""env(?:iron)?(?:\.get)?[\[(]["'](LORESTORE_\w+)""", source))
        if path.name != "config.py":
            assert "os.environ" not in source and "getenv" not in source, path
        read |= found
    assert read <= set(DOCUMENTED_VARIABLES)
    assert read, "the scan found no variables at all; the pattern is broken"


def test_streaming_operations_move_bulk_data_over_rest_and_the_cli_only() -> None:
    """Export and import are declared once, like every operation, but carried by hand-written
    adapters; DESIGN §6 keeps them off MCP. The parity checks above cover their CLI fields,
    tests/surfaces/test_http.py their routes."""
    streaming = {op.name: op for op in CATALOG if op.streaming}
    assert set(streaming) == {"memory_export", "memory_import"}
    for op in streaming.values():
        assert op.surfaces == {"rest", "cli"}, op.name
    assert streaming["memory_import"].mutates and not streaming["memory_export"].mutates
    commands = _commands()
    assert {(None, "export"), (None, "import")} <= set(commands)


def test_every_module_is_on_the_architecture_map() -> None:
    """docs/architecture.md's layout names every module and package of src/lorestore (a new
    module must say where it sits); a name that is not there makes this fail."""
    text = (DOCS / "architecture.md").read_text()
    layout = text[text.index("## Layout") : text.index("Dependencies point inward")]
    package = ROOT / "src" / "lorestore"
    modules = [p for p in package.rglob("*.py") if "migrations" not in p.relative_to(package).parts]
    assert len(modules) > 80  # the control: the walk found the tree
    missing = [
        str(p.relative_to(package))
        for p in modules
        if (p.name != "__init__.py" and p.name not in layout)
        or (p.name == "__init__.py" and p.parent != package and f"{p.parent.name}/" not in layout)
    ]
    assert not missing, f"add these to docs/architecture.md's layout: {missing}"
