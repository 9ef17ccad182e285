"""The confusables skeleton (Unicode UTS #39) of text: each non-ASCII character that looks like
another is replaced by the one prototype of its class, so ``Use`` spelled with
U+0435 CYRILLIC SMALL LETTER IE and ``Use`` have one skeleton.

The table is ``confusables.json`` beside this module, generated from Unicode's
``confusables.txt`` as the ``confusable-homoglyphs`` package ships it (a dev dependency,
pinned: a digest must not change with an upgrade; ``python -m lorestore.core.confusables``
writes it, and a test checks that it is what the pinned data gives). Nothing is downloaded,
and reading the table takes milliseconds where deriving it takes half a second. The package keeps
each line ``source -> prototype`` as an edge both ways, so the classes are rebuilt as the
connected parts of that graph and each is named by its prototype: the member linked to all
the others (a class of two, whose direction the file no longer tells, by its ASCII or else
its lowest member). Unlike UTS #39 itself, ASCII characters are kept as written: ``1`` and
``l``, ``0`` and ``O``, ``rn`` and ``m`` are different words in code and commands, and a
look-alike that passes for ASCII text is made of non-ASCII characters.
"""

from __future__ import annotations

import json
import unicodedata
from functools import cache
from pathlib import Path

DATA_PACKAGE = "confusable_homoglyphs"
TABLE = "confusables.json"
_MARK = "\u200e"  # LEFT-TO-RIGHT MARK: the package wraps right-to-left characters in two


def skeleton(text: str) -> str:
    """``text`` with every confusable non-ASCII character made its class's prototype."""
    if text.isascii():
        return text
    return text.translate(_table())


@cache
def _table() -> dict[int, str]:
    # Beside this module (importlib.resources costs a cold process more than the read).
    shipped = Path(__file__).with_name(TABLE)
    table: dict[str, str] = json.loads(shipped.read_text("utf-8"))
    return {ord(char): proto for char, proto in table.items()}


def build_table() -> dict[str, str]:
    """Character -> the prototype it becomes, folded as values are (NFKC,
    case-folded) until nothing changes, for every confusable non-ASCII character."""
    graph = _graph()
    parent: dict[str, str] = {node: node for node in graph}

    def root(node: str) -> str:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for node, others in graph.items():
        for other in others:
            parent[root(node)] = root(other)
    classes: dict[str, list[str]] = {}
    for node in graph:
        classes.setdefault(root(node), []).append(node)
    prototype: dict[str, str] = {}
    for members in classes.values():
        named = min(members, key=lambda m: _rank(m, graph, len(members)))
        for member in members:
            prototype[member] = named
    raw = {
        ord(char): proto
        for char, proto in prototype.items()
        if len(char) == 1 and not char.isascii() and proto != char
    }
    return {chr(code): _settled(proto, raw) for code, proto in sorted(raw.items())}


def _rank(member: str, graph: dict[str, set[str]], size: int) -> tuple[int, int, int, str]:
    """The prototype first: linked to every other member, then a sequence (only prototypes
    are), then ASCII, then the lowest."""
    linked = len(graph[member]) == size - 1
    return (not linked, len(member) == 1, not member.isascii(), member)


def _settled(text: str, raw: dict[int, str]) -> str:
    """Fold and map again until stable, so that a skeleton is its own skeleton."""
    for _ in range(8):
        folded = unicodedata.normalize(
            "NFKC", unicodedata.normalize("NFKC", text).casefold()
        ).translate(raw)
        if folded == text:
            break
        text = folded
    return text


def _graph() -> dict[str, set[str]]:
    from importlib import resources  # building the table is a maintainer's step

    data = json.loads(resources.files(DATA_PACKAGE).joinpath("confusables.json").read_text("utf-8"))
    graph: dict[str, set[str]] = {}
    for char, entries in data.items():
        node = char.replace(_MARK, "")
        for entry in entries:
            other = entry["c"].replace(_MARK, "")
            if node and other and node != other:
                graph.setdefault(node, set()).add(other)
                graph.setdefault(other, set()).add(node)
    return graph


if __name__ == "__main__":  # regenerate the shipped table from the pinned package's data
    import sys

    sys.stdout.write(json.dumps(build_table(), ensure_ascii=False, sort_keys=True) + "\n")
