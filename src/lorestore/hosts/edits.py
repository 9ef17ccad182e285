"""What install adds to one file and how it is taken out again, structurally: entries of a
JSON document (keys set, items in lists), tables of a TOML document (edited with tomlkit, so
comments and layout stay), a file lorestore owns whole, and a marked block of a Markdown file.

``apply`` is idempotent (applying to its own output gives the same text) and ``remove``
takes out exactly what ``apply`` put in, answering None when nothing of anyone else's is
left (the file is then removed). The install manifest (install.py) restores an unchanged
file byte for byte; these structural removals serve a file edited since."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from lorestore.core.errors import LorestoreError

KeyPath = tuple[str, ...]


class Edit(Protocol):
    @property
    def path(self) -> Path: ...

    def apply(self, text: str | None) -> str: ...

    def remove(self, text: str) -> str | None: ...

    def holds(self, text: str) -> bool: ...


def _unreadable(path: Path, what: str, exc: Exception) -> LorestoreError:
    return LorestoreError(
        "config_error",
        f"{path} is not valid {what}: {exc}",
        hint="fix or move the file aside, then run the command again (nothing was changed)",
        details={"path": str(path)},
    )


def _indent(text: str) -> int | str:
    """The indentation a JSON document uses (2 when it has none to go by)."""
    match = re.search(r"^([ \t]+)\S", text, re.MULTILINE)
    if match is None:
        return 2
    got = match.group(1)
    return got if "\t" in got else len(got)


@dataclass(frozen=True)
class JsonEdit:
    """Keys set to values (``entries``), keys set only when absent (``defaults``), and items
    put in lists (``items``: the list's key path, the items; ``ours`` tells an item of
    lorestore's from anyone else's, so a second install replaces them in place)."""

    path: Path
    entries: Sequence[tuple[KeyPath, Any]] = ()
    defaults: Sequence[tuple[KeyPath, Any]] = ()
    items: Sequence[tuple[KeyPath, Sequence[Any]]] = ()
    ours: Callable[[Any], bool] = field(default=lambda item: False)

    def _load(self, text: str | None) -> dict[str, Any]:
        if text is None or not text.strip():
            return {}
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise _unreadable(self.path, "JSON", exc) from None
        if not isinstance(data, dict):
            raise _unreadable(self.path, "JSON", ValueError("the top level is not an object"))
        return data

    def _dump(self, data: dict[str, Any], text: str | None) -> str:
        indent = _indent(text) if text else 2
        return json.dumps(data, indent=indent, ensure_ascii=False) + "\n"

    def apply(self, text: str | None) -> str:
        data = self._load(text)
        for keys, value in self.defaults:
            parent = _container(data, keys[:-1])
            parent.setdefault(keys[-1], value)
        for keys, value in self.entries:
            _container(data, keys[:-1])[keys[-1]] = value
        for keys, items in self.items:
            parent = _container(data, keys[:-1])
            current = parent.get(keys[-1])
            if not isinstance(current, list):
                current = []
            positions = [i for i, item in enumerate(current) if self.ours(item)]
            others = [item for item in current if not self.ours(item)]
            at = positions[0] if positions else len(others)
            parent[keys[-1]] = [*others[:at], *items, *others[at:]]
        return self._dump(data, text)

    def holds(self, text: str) -> bool:
        """Whether ``text`` has any of what ``apply`` adds."""
        data = self._load(text)
        for keys, _ in self.entries:
            parent = _find(data, keys[:-1])
            if parent is not None and keys[-1] in parent:
                return True
        for keys, _ in self.items:
            parent = _find(data, keys[:-1])
            current = parent.get(keys[-1]) if parent is not None else None
            if isinstance(current, list) and any(self.ours(item) for item in current):
                return True
        return False

    def remove(self, text: str) -> str | None:
        data = self._load(text)
        touched: list[KeyPath] = []
        for keys, _ in self.entries:
            parent = _find(data, keys[:-1])
            if parent is not None:
                parent.pop(keys[-1], None)
                touched.append(keys[:-1])
        for keys, _ in self.items:
            parent = _find(data, keys[:-1])
            if parent is not None and isinstance(parent.get(keys[-1]), list):
                kept = [item for item in parent[keys[-1]] if not self.ours(item)]
                if kept:
                    parent[keys[-1]] = kept
                else:
                    del parent[keys[-1]]
                touched.append(keys[:-1])
        for keys in sorted(set(touched), key=len, reverse=True):
            _prune(data, keys)
        added = {keys[0]: value for keys, value in self.defaults if len(keys) == 1}
        if all(key in added and data[key] == added[key] for key in data):
            return None  # nothing is left but what install would add
        return self._dump(data, text)


def _container(data: dict[str, Any], keys: KeyPath) -> dict[str, Any]:
    node = data
    for key in keys:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    return node


def _find(data: dict[str, Any], keys: KeyPath) -> dict[str, Any] | None:
    node: Any = data
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def _prune(data: dict[str, Any], keys: KeyPath) -> None:
    """Drop the containers along ``keys`` that removal left empty, deepest first."""
    for depth in range(len(keys), 0, -1):
        parent = _find(data, keys[: depth - 1])
        if parent is None:
            continue
        child = parent.get(keys[depth - 1])
        if isinstance(child, dict | list) and not child:
            del parent[keys[depth - 1]]


@dataclass(frozen=True)
class TomlEdit:
    """A table set whole (``table``: its key path and content), and keys set to a value
    when absent (``flags``, e.g. Codex's ``[features] codex_hooks = true``)."""

    path: Path
    table: tuple[KeyPath, dict[str, Any]]
    flags: Sequence[tuple[KeyPath, Any]] = ()

    def _load(self, text: str | None) -> Any:
        import tomlkit

        try:
            return tomlkit.parse(text or "")
        except Exception as exc:  # tomlkit's parse errors share no useful base
            raise _unreadable(self.path, "TOML", exc) from None

    def apply(self, text: str | None) -> str:
        import tomlkit

        doc = self._load(text)
        keys, content = self.table
        parent = _toml_parent(doc, keys[:-1])
        table = tomlkit.table()
        for name, value in content.items():
            if isinstance(value, dict):
                sub = tomlkit.table()
                for k, v in value.items():
                    sub.add(k, v)
                table.add(name, sub)
            else:
                table.add(name, value)
        if keys[-1] in parent:
            if parent[keys[-1]].unwrap() != content:  # the same table stays as it is laid out
                parent[keys[-1]] = table
        else:
            parent.add(keys[-1], table)
        for fkeys, value in self.flags:
            fparent = _toml_parent(doc, fkeys[:-1])
            if fkeys[-1] not in fparent:
                fparent[fkeys[-1]] = value
        out = tomlkit.dumps(doc)
        return out if out.endswith("\n") else out + "\n"

    def holds(self, text: str) -> bool:
        keys, _ = self.table
        parent = _toml_find(self._load(text), keys[:-1])
        return parent is not None and keys[-1] in parent

    def remove(self, text: str) -> str | None:
        import tomlkit

        doc = self._load(text)
        keys, _ = self.table
        parent = _toml_find(doc, keys[:-1])
        if parent is not None and keys[-1] in parent:
            del parent[keys[-1]]
            if not parent and len(keys) > 1:
                grand = _toml_find(doc, keys[:-2])
                if grand is not None:
                    del grand[keys[-2]]
        out = tomlkit.dumps(doc)
        return out if out.strip() else None


def _toml_parent(doc: Any, keys: KeyPath) -> Any:
    import tomlkit

    node = doc
    for key in keys:
        if key not in node:
            node.add(key, tomlkit.table(is_super_table=True))
        node = node[key]
    return node


def _toml_find(doc: Any, keys: KeyPath) -> Any:
    node = doc
    for key in keys:
        if key not in node:
            return None
        node = node[key]
    return node


@dataclass(frozen=True)
class OwnedFile:
    """A file that is lorestore's whole (a skill, a rule)."""

    path: Path
    content: str

    def apply(self, text: str | None) -> str:
        return self.content

    def remove(self, text: str) -> str | None:
        return None

    def holds(self, text: str) -> bool:
        return True


BEGIN = (
    "<!-- lorestore:begin (written by `lorestore install`; removed by `lorestore uninstall`) -->"
)
END = "<!-- lorestore:end -->"
_BLOCK = re.compile(r"(\n?)" + re.escape(BEGIN) + r".*?" + re.escape(END) + r"\n?", re.DOTALL)


@dataclass(frozen=True)
class MarkedBlock:
    """lorestore's block in a Markdown file others write too (Codex's AGENTS.md)."""

    path: Path
    block: str

    def _wrapped(self) -> str:
        return f"{BEGIN}\n{self.block.rstrip()}\n{END}\n"

    def apply(self, text: str | None) -> str:
        if not text:
            return self._wrapped()
        if _BLOCK.search(text):
            return _BLOCK.sub(lambda m: m.group(1) + self._wrapped(), text, count=1)
        sep = "" if text.endswith("\n\n") else "\n" if text.endswith("\n") else "\n\n"
        return f"{text}{sep}{self._wrapped()}"

    def holds(self, text: str) -> bool:
        return _BLOCK.search(text) is not None

    def remove(self, text: str) -> str | None:
        rest = _BLOCK.sub("", text, count=1)
        return rest if rest.strip() else None
