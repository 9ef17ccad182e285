"""Builds a Typer command for each catalog operation from its params model.

Fields become options (``tags`` -> repeatable ``--tag``); the operation's ``cli_args`` become
positional arguments; ``source`` is flattened into ``--agent``, ``--repo``, ``--commit``...;
``depends_on`` is ``--depends-on PATH=BLOB`` and a recall's ``blobs`` ``--blob PATH=BLOB``.
Every command takes ``--json``.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any

import typer
from pydantic.fields import FieldInfo

from lorestore.cli.render import failure
from lorestore.core.errors import LorestoreError
from lorestore.core.records import Source
from lorestore.core.validation import MAX_VALUE_BYTES
from lorestore.operations import Operation

_SINGULAR = {"tags": "tag", "scopes": "scope", "orgs": "org"}
_SHORT = {"scopes": "-s", "tags": "-t"}
_SOURCE_FIELDS = tuple(name for name in Source.model_fields if name != "session")
_SOURCE_PREFIX = "source_"
Runner = Callable[[Operation, dict[str, Any], bool], None]


def _unwrap_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _cli_type(annotation: Any) -> Any:
    inner = _unwrap_optional(annotation)
    if typing.get_origin(inner) is typing.Literal:
        return str
    if typing.get_origin(inner) is list:
        return list[str]
    return inner


def _option_parameter(name: str, field: FieldInfo, positional: bool) -> inspect.Parameter:
    annotation = _cli_type(field.annotation)
    required = field.is_required()
    help_text = field.description or ""
    default: Any = None if (required or field.default is None) else field.default
    info: Any
    if positional:
        optional_value = name == "value"
        info = typer.Argument(
            help=help_text + (" (or '-' / omitted: read stdin)" if optional_value else ""),
            show_default=False,
            metavar=name.upper(),
        )
        if optional_value:
            annotation = str | None
            default = None
        elif required:
            default = inspect.Parameter.empty
    else:
        flag = "--" + _SINGULAR.get(name, name).replace("_", "-")
        # A setting that may be left as it is (bool | None) can be turned on and back off.
        switch = annotation is bool and default is None
        if switch:
            flag = f"{flag}/--no-{flag.removeprefix('--')}"
        decls = [flag, *([_SHORT[name]] if name in _SHORT else [])]
        metavar = "" if annotation is bool else _SINGULAR.get(name, name).upper()
        info = typer.Option(
            *decls, help=help_text, show_default=default not in (None, False), metavar=metavar
        )
        if annotation == list[str]:
            annotation = list[str] | None
        elif required and annotation is not bool:
            default = inspect.Parameter.empty  # Click refuses its absence, and --help says so
        elif default is None and (switch or annotation is not bool):
            annotation = annotation | None
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[annotation, info],
    )


def _source_parameters() -> list[inspect.Parameter]:
    params = []
    for name in _SOURCE_FIELDS:
        annotation = int | None if name == "pr" else str | None
        info = typer.Option(
            f"--{name.replace('_', '-')}",
            help=f"provenance: source.{name}",
            rich_help_panel="Provenance",
            metavar=name.upper(),
        )
        params.append(
            inspect.Parameter(
                _SOURCE_PREFIX + name,
                inspect.Parameter.KEYWORD_ONLY,
                default=None,
                annotation=Annotated[annotation, info],
            )
        )
    return params


def _repeatable(name: str, info: Any) -> inspect.Parameter:
    """A repeatable option of raw text items, parsed by ``_collect`` (``PATH=BLOB`` forms)."""
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[list[str] | None, info],
    )


def build_command(op: Operation, run: Runner) -> Callable[..., None]:
    """A function whose signature Typer reads as the command's arguments and options."""
    parameters: list[inspect.Parameter] = []
    for name in op.cli_args:
        parameters.append(_option_parameter(name, op.params.model_fields[name], positional=True))
    for name, field in op.params.model_fields.items():
        if name in op.cli_args:
            continue
        if name == "source":
            parameters.extend(_source_parameters())
        elif name == "depends_on":
            info = typer.Option(
                "--depends-on",
                help="a file the lesson relies on: PATH (relative to the current directory, "
                "as git reads paths; its blob hash is read from git) or PATH=BLOB; repeatable",
                rich_help_panel="Provenance",
            )
            parameters.append(_repeatable(name, info))
        elif name == "blobs":
            info = typer.Option(
                "--blob",
                help="a file as it is now, for the files policy: PATH=BLOB (its git blob hash) "
                "or PATH= (the file is gone); PATH relative to the current directory; "
                "repeatable. Read from git for every file not given",
                metavar="PATH=BLOB",
            )
            parameters.append(_repeatable(name, info))
        else:
            parameters.append(_option_parameter(name, field, positional=False))
    json_info = typer.Option("--json", help="print the result (or error) as JSON")
    parameters.append(
        inspect.Parameter(
            "json_output",
            inspect.Parameter.KEYWORD_ONLY,
            default=False,
            annotation=Annotated[bool, json_info],
        )
    )

    def command(**kwargs: Any) -> None:
        as_json = bool(kwargs.pop("json_output"))
        try:
            data = _collect(op, kwargs)
        except LorestoreError as error:
            raise failure(error, as_json) from None
        run(op, data, as_json)

    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__name__ = op.cli_name.replace("-", "_")
    command.__doc__ = op.summary
    return command


def _collect(op: Operation, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Turn parsed command-line values into the operation's raw arguments."""
    data: dict[str, Any] = {}
    source = {
        k.removeprefix(_SOURCE_PREFIX): v
        for k, v in kwargs.items()
        if k.startswith(_SOURCE_PREFIX) and v is not None
    }
    if source:
        data["source"] = source
    for name, value in kwargs.items():
        if name.startswith(_SOURCE_PREFIX) or value is None:
            continue
        if name == "depends_on":
            data[name] = [_dependency(item) for item in value]
        elif name == "blobs":
            data[name] = dict(_blob(item) for item in value)
        else:
            data[name] = value
    if "value" in op.params.model_fields and data.get("value") in (None, "-"):
        data["value"] = _read_stdin()
    for name, field in op.params.model_fields.items():
        if name not in data and field.is_required() and _cli_type(field.annotation) == list[str]:
            data[name] = []
    return data


# A git blob hash: SHA-1 (40 hex digits) or SHA-256 (64), in either case.
_BLOB = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")


def _dependency(item: str) -> dict[str, str]:
    """``PATH`` (the blob is read from git) or ``PATH=BLOB``; PATH is relative to the current
    directory, as a git pathspec is, and stored relative to the repository root."""
    path, sep, blob = item.rpartition("=")
    if not sep or not _BLOB.fullmatch(blob):
        path, blob = item, ""  # no blob after the last "=": all of it names the file
    if not path:
        raise LorestoreError(
            "invalid_argument",
            f"--depends-on {item!r} is not PATH or PATH=BLOB",
            hint="e.g. --depends-on tests/conftest.py",
        )
    from lorestore.gitinfo import repo_path

    path = repo_path(os.getcwd(), path)
    return {"path": path, "blob": blob.lower()} if blob else {"path": path}


def _blob(item: str) -> tuple[str, str | None]:
    """``PATH=BLOB``, or ``PATH=`` for a file that is gone (None); PATH as ``--depends-on``
    takes it."""
    path, sep, blob = item.rpartition("=")  # a file name may hold "="; a blob does not
    if not path or not sep or (blob and not _BLOB.fullmatch(blob)):
        raise LorestoreError(
            "invalid_argument",
            f"--blob {item!r} is not PATH=BLOB or PATH=",
            hint="e.g. --blob tests/conftest.py=$(git hash-object tests/conftest.py)",
        )
    from lorestore.gitinfo import repo_path

    return repo_path(os.getcwd(), path, "--blob"), blob.lower() or None


def _read_stdin() -> str:
    if sys.stdin is None or sys.stdin.isatty():
        raise LorestoreError(
            "invalid_value",
            "no lesson value given",
            hint="pass it as the third argument or pipe it on stdin",
        )
    # At most one byte past the limit: a larger value is refused without holding it all.
    raw = sys.stdin.buffer.read(MAX_VALUE_BYTES + 3)  # + a line ending the shell may add
    if len(raw) > MAX_VALUE_BYTES + 2:
        raise LorestoreError(
            "value_too_large",
            f"the value on stdin is more than {MAX_VALUE_BYTES} bytes (64 KiB), the limit",
            hint="split it into several lessons or link to a document",
            details={"limit": MAX_VALUE_BYTES},
        )
    try:
        value = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LorestoreError(
            "invalid_value",
            f"the value on stdin is not UTF-8 text ({exc.reason} at byte {exc.start})",
            hint="lessons are text: convert the input to UTF-8",
        ) from None
    # One line ending, as a shell's `echo` or a Windows pipe (CRLF) adds it.
    return value.removesuffix("\r\n") if value.endswith("\r\n") else value.removesuffix("\n")


def default_action(command: Callable[..., None]) -> Callable[..., None]:
    """Make a command the callback of a group: it runs only when no sub-command was given,
    and takes the same options."""

    signature = inspect.signature(command)

    def callback(ctx: typer.Context, **kwargs: Any) -> None:
        if ctx.invoked_subcommand is None:
            command(**kwargs)
            return
        given = [
            name
            for name, value in kwargs.items()
            if value != signature.parameters[name].default and value not in (None, [], ())
        ]
        if given:  # the group's options belong to the listing, not to the sub-command
            options = ", ".join(
                "--" + name.replace("_output", "").replace("_", "-") for name in given
            )
            raise typer.BadParameter(
                f"{options} given before `{ctx.invoked_subcommand}`: put the sub-command's "
                f"options after it (lorestore {ctx.info_name} {ctx.invoked_subcommand} --json)"
            )

    context = inspect.Parameter(
        "ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context
    )
    callback.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[context, *signature.parameters.values()]
    )
    callback.__doc__ = command.__doc__
    return callback
