"""The LoreKit local store, read and written: a directory tree (``global/``,
``project/<name>/``, ``repo/<owner>/<repo>/``, ``branch/<owner>/<repo>/<branch>/``) of
``<slug>.md`` files, each a front matter of ``name: <JSON value>`` lines then the lesson text.

Files map to and from lesson records of the interchange format, so the importer and the
exporter handle one shape. What a file says that lorestore would normalise away (a scope, key
or tag spelling, a file path, fields LoreKit has and lorestore does not) is kept in the lesson's
``ext`` under ``lorekit``, so that a tree comes back byte for byte; what lorestore holds and a
file cannot is reported by the writer (``lorekit_writer``), never written as a field LoreKit
would misread.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from datetime import UTC
from pathlib import Path, PurePosixPath
from typing import Any

from lorestore.core.errors import LorestoreError
from lorestore.core.scope import Scope, parse_scope
from lorestore.core.timestamps import parse_ts
from lorestore.core.validation import validate_key, validate_tags
from lorestore.portable.jsonl import Incoming, decode_value

TOP = ("global", "project", "repo", "branch")
# LoreKit's own local server files a lesson whose scope it cannot place (a malformed or
# mixed-case scope, as an agent wrote it) under _other/, keeping the scope as written.
OTHER = "_other"
FIELDS = (
    "scope",
    "key",
    "tags",
    "source_agent",
    "trigger",
    "created",
    "updated",
    "archived_at",
    "origin_repo",
    "origin_branch",
    "origin_commit",
    "origin_pr",
    "expires_at",
    "seen_count",
)
# front-matter field -> source field
_SOURCE = {
    "source_agent": "agent",
    "trigger": "trigger",
    "origin_repo": "repo",
    "origin_branch": "branch",
    "origin_commit": "commit",
    "origin_pr": "pr",
}
_TIMES = {"created": "created_at", "updated": "updated_at", "archived_at": "archived_at"}
_SLUG_OUTSIDE = re.compile(r"[^a-z0-9]+")
MAX_SLUG = 80
WITHHELD_TRUST = ("rejected", "disputed")  # withheld from recall here; a file would serve them


class LoreKitError(ValueError):
    """A file that is not a LoreKit lesson."""


def slug(key: str) -> str:
    """The key lower-cased, runs outside a-z0-9 made '-', trimmed of '-', at most 80
    characters (trimmed again), or ``entry``."""
    text = _SLUG_OUTSIDE.sub("-", key.lower()).strip("-")
    return text[:MAX_SLUG].rstrip("-") or "entry"


def scope_dir(scope: Scope) -> PurePosixPath:
    if scope.kind == "global":
        return PurePosixPath("global")
    if scope.kind == "project":
        return PurePosixPath("project", str(scope.project))
    if scope.kind == "repo":
        return PurePosixPath("repo", str(scope.owner), str(scope.name))
    return PurePosixPath("branch", str(scope.owner), str(scope.name), *str(scope.branch).split("/"))


def ms(text: str | None) -> str | None:
    """A time as LoreKit writes it: ISO 8601, milliseconds, Z."""
    if text is None:
        return None
    return parse_ts(text).astimezone(UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- record -> file ---------------------------------------------------------------------------


def _kept(record: dict[str, Any]) -> dict[str, Any]:
    return _object(record, "lorekit")


def _object(holder: dict[str, Any], name: str) -> dict[str, Any]:
    value = holder.get(name)
    return value if isinstance(value, dict) else {}


def front_matter(record: dict[str, Any]) -> list[tuple[str, str]]:
    """The lines of a lesson record's file, as (field, JSON text), in the file's order."""
    kept, source = _kept(record), record.get("source") or {}
    archived = record.get("archived_at") or record.get("updated_at")
    values: dict[str, Any] = {
        "scope": _spelling(kept.get("scope"), record["scope"], _scope_text),
        "key": _spelling(kept.get("key"), record["key"], validate_key),
        "tags": _spelling(kept.get("tags"), record.get("tags") or [], _tags),
        "created": ms(record.get("created_at")),
        "updated": ms(record.get("updated_at")),
        "archived_at": ms(archived) if record.get("status") == "archived" else None,
        "expires_at": ms(record.get("expires_at")),
        "seen_count": record.get("seen_count", 1),
    }
    values |= {name: source.get(inner) for name, inner in _SOURCE.items()}
    # A field the file left out stays out while it still holds what reading fills in.
    omitted = set(kept.get("omitted") or ())
    implied = {"tags": [], "seen_count": 1, "updated": values["created"]}
    written = [n for n in FIELDS if not (n in omitted and values[n] == implied.get(n))]
    extra = _extra(kept)
    lines = [(name, text) for name, text, anchor in extra if anchor is None]
    for n in FIELDS:
        lines += [(n, _json(values[n]))] if n in written else []
        lines += [(name, text) for name, text, anchor in extra if anchor == n]
    return lines


def _extra(kept: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """The fields LoreKit has and lorestore does not, in the file's order: each with its JSON
    text as the file wrote it (while that still reads as the value kept: a store may reorder
    an object's keys) and the known field it follows (None: it came first; by default, the
    last, so after every known field)."""
    raw, after = _object(kept, "raw"), _object(kept, "after")
    out: list[tuple[str, str, str | None]] = []
    for pair in kept.get("fields") or []:
        if not (isinstance(pair, list) and len(pair) == 2 and field_name(pair[0])):
            continue  # a name no front-matter line could carry (losses() reports it)
        name, value = str(pair[0]), pair[1]
        text = raw.get(name)
        anchor = after.get(name, FIELDS[-1])
        if anchor is not None and anchor not in FIELDS:
            anchor = FIELDS[-1]
        if not (isinstance(text, str) and _reads_as(text, value)):
            text = _json(value)
        out.append((name, text, anchor))
    return out


_FIELD_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


def field_name(name: Any) -> bool:
    """Whether ``name`` can be an unknown field's front-matter line: a plain word (a colon, a
    line break or a space would break the line), and not one of LoreKit's own fields."""
    return isinstance(name, str) and bool(_FIELD_NAME.fullmatch(name)) and name not in FIELDS


def _reads_as(text: str, value: Any) -> bool:
    """Whether ``text`` is one line of JSON that reads as ``value`` (keys in any order)."""
    if "\n" in text:
        return False
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False


def _spelling(original: Any, value: Any, normalise: Any) -> Any:
    """The file's own spelling of a value, while it still means what lorestore holds."""
    try:
        return original if original is not None and normalise(original) == value else value
    except (LorestoreError, TypeError, AttributeError):
        return value


def _scope_text(text: str) -> str:
    return parse_scope(text).text


def _tags(tags: list[str]) -> list[str]:
    return list(validate_tags(tags))


def relative_path(record: dict[str, Any]) -> PurePosixPath:
    """Where the lesson's file goes: where it was read from while that is still a file in its
    scope's directory (spelled in any case, as scopes compare), else ``<scope dir>/<slug>.md``."""
    kept = _kept(record).get("file")
    canonical = scope_dir(parse_scope(record["scope"])) / f"{slug(record['key'])}.md"
    if isinstance(kept, str) and _in_folder(kept, canonical.parent):
        return PurePosixPath(kept)
    return canonical


def _in_folder(path: str, folder: PurePosixPath) -> bool:
    """A relative ``.md`` file directly in ``folder``, its directories compared in lower case."""
    kept = PurePosixPath(path)
    if kept.is_absolute() or "\x00" in path or not kept.name.endswith(".md"):
        return False
    parts = kept.parent.parts
    return ".." not in parts and tuple(p.lower() for p in parts) == folder.parts


def file_text(record: dict[str, Any]) -> str:
    lines = [f"{name}: {text}" for name, text in front_matter(record)]
    return "---\n" + "\n".join(lines) + "\n---\n" + str(record["value"]) + "\n"


# --- file -> record ---------------------------------------------------------------------------


def parse_file(text: str, path: str) -> dict[str, Any]:
    """A LoreKit file as a lesson record of the interchange format (without an id)."""
    if not text.startswith("---\n"):
        raise LoreKitError("a LoreKit file starts with a '---' line")
    end = text.find("\n---\n", 3)
    if end < 0:
        raise LoreKitError("the front matter has no closing '---' line")
    fields: dict[str, Any] = {}
    texts: dict[str, str] = {}  # each field's JSON text as the file wrote it
    for line in text[4:end].split("\n"):
        name, sep, raw = line.partition(":")
        if not sep or not name or name in fields:
            raise LoreKitError(f"front matter line {line[:60]!r} is not a new 'name: value'")
        texts[name] = raw.strip()
        try:
            fields[name] = decode_value(texts[name])
        except ValueError as exc:
            raise LoreKitError(f"{name}: the value is not JSON a store can hold ({exc})") from None
    body = text[end + 5 :]
    if "\x00" in body or "\x00" in text[:end]:
        raise LoreKitError("the file holds a NUL character: lorestore stores text")
    return _record(fields, texts, body.removesuffix("\n"), path)


def _record(fields: dict[str, Any], texts: dict[str, str], value: str, path: str) -> dict[str, Any]:
    for name in ("scope", "key", "created"):
        if not isinstance(fields.get(name), str):
            raise LoreKitError(f"the front matter needs {name} (a string)")
    updated = fields.get("updated") or fields["created"]
    archived = fields.get("archived_at")
    source = {
        inner: fields[name] for name, inner in _SOURCE.items() if fields.get(name) is not None
    }
    record: dict[str, Any] = {
        "type": "lesson",
        "scope": repaired_scope(fields["scope"]),
        "key": fields["key"],
        "value": value,
        "tags": fields.get("tags") or [],
        "trust": "candidate",
        "status": "archived" if archived else "active",
        "version": 1,
        "seen_count": 1 if fields.get("seen_count") is None else fields["seen_count"],
        "recorded_at": updated,
        "created_at": fields["created"],
        "updated_at": updated,
        "archived_at": archived,
        "expires_at": fields.get("expires_at"),
        "source": source,
    }
    kept = _fidelity(fields, texts, record, path, fields["scope"])
    if kept:
        record["lorekit"] = kept
    return record


def repaired_scope(written: str) -> str:
    """The scope a file's ``written`` scope stands for: itself when it is one, else the
    corrected form the scope grammar suggests (``repo:acme/app`` -> ``repo::acme/app``),
    followed while it suggests one; a scope with no correction is left for the importer to
    refuse, and say why."""
    text = written
    for _ in range(4):  # each correction mends one mistake
        try:
            return parse_scope(text).text
        except LorestoreError as exc:
            corrected = exc.details.get("corrected")
            if not isinstance(corrected, str) or corrected == text:
                return written
            text = corrected
    return written


def mapped_scope(record: Mapping[str, Any]) -> str | None:
    """The scope a LoreKit file wrote, when it was imported under another (its case, or a
    repaired spelling); None when it was imported as written."""
    kept = record.get("lorekit") or {}
    written = kept.get("scope") if isinstance(kept, Mapping) else None
    return written if isinstance(written, str) and written != record.get("scope") else None


def _fidelity(
    fields: dict[str, Any],
    texts: dict[str, str],
    record: dict[str, Any],
    path: str,
    written_scope: str,
) -> dict[str, Any]:
    """What the file says that lorestore would otherwise normalise away."""
    kept: dict[str, Any] = {}
    try:
        scope = parse_scope(record["scope"])
        key = validate_key(record["key"])
    except LorestoreError:
        return kept  # the importer refuses the scope or key and says why
    if scope.text != written_scope:
        kept["scope"] = written_scope
    if key != record["key"]:
        kept["key"] = record["key"]
    if isinstance(record["tags"], list) and _spelling_differs(record["tags"]):
        kept["tags"] = record["tags"]
    if path != str(scope_dir(scope) / f"{slug(key)}.md"):
        kept["file"] = path
    kept |= _unknown_fields(fields, texts)
    omitted = [name for name in FIELDS if name not in fields]
    if omitted:
        kept["omitted"] = omitted
    return kept


def _unknown_fields(fields: dict[str, Any], texts: dict[str, str]) -> dict[str, Any]:
    """The fields lorestore does not know: their values in order (``fields``), their JSON text
    (``raw``), and for each one a known field comes after, the known field it follows
    (``after``, null when it comes first); the rest follow every known field."""
    names = list(fields)
    unknown = [name for name in names if name not in FIELDS]
    if not unknown:
        return {}
    after: dict[str, str | None] = {}
    for i, name in enumerate(names):
        if name in FIELDS or not any(n in FIELDS for n in names[i + 1 :]):
            continue
        after[name] = next((n for n in reversed(names[:i]) if n in FIELDS), None)
    kept: dict[str, Any] = {
        "fields": [[name, fields[name]] for name in unknown],
        "raw": {name: texts[name] for name in unknown},
    }
    return kept | ({"after": after} if after else {})


def _spelling_differs(tags: list[Any]) -> bool:
    try:
        return _tags(tags) != tags
    except (LorestoreError, AttributeError, TypeError):
        return False


LEAVES_TREE = "a symbolic link that leaves the tree is not followed"
OUTSIDE_TREE = "outside_tree"  # an export's lesson whose directory is a link out


def inside(path: Path, root: Path) -> bool:
    """Whether ``path``, every symbolic link on it followed, is ``root`` (resolved) or under
    it: what a tree's reader and writer may touch, so that a link never takes either out."""
    return path.resolve().is_relative_to(root)


def read_tree(root: Path, within: Path | None = None) -> Iterator[Incoming]:
    """Every lesson file under a LoreKit directory, in path order, one directory at a time; a
    file or directory that cannot be read is named, and the rest still read. Nothing outside
    the tree is read: a link leaving it is named, as is a tree that itself leads out of
    ``within`` (a repository's ``.lorekit`` linked elsewhere)."""
    top_root = root.resolve()
    if within is not None and not top_root.is_relative_to(within.resolve()):
        message = f"the LoreKit directory is a symbolic link that leaves the repository {within}"
        yield Incoming(path=".", error=f"{message}: not read")
        return
    for top in (*TOP, OTHER):
        folder = root / top
        if folder.is_symlink() and not inside(folder, top_root):
            yield Incoming(path=top, error=LEAVES_TREE)
            continue
        for path, problem in _walk(folder, top_root):
            rel = path.relative_to(root).as_posix()
            if problem is not None:
                yield Incoming(path=rel, error=problem)
                continue
            try:
                record = parse_file(_file_text(path), rel)
            except (OSError, UnicodeDecodeError, LoreKitError) as exc:
                yield Incoming(path=rel, error=str(exc))
                continue
            yield Incoming(path=rel, record=record)


def _file_text(path: Path) -> str:
    """A file's text as written: a carriage return in a lesson is the lesson's own. A file
    whose front matter ends its lines with CRLF (a Windows checkout) is read with LF."""
    text = path.read_bytes().decode("utf-8")
    return text.replace("\r\n", "\n") if text.startswith("---\r\n") else text


def _walk(folder: Path, root: Path) -> Iterator[tuple[Path, str | None]]:
    """The ``.md`` files under ``folder`` (a symbolic link to a file in the tree ``root`` is
    followed; one to a directory, or leaving the tree, named and not followed), each with
    None, or a path with what kept it unread."""
    if not folder.is_dir():
        return
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        yield folder, f"the directory cannot be read: {exc.strerror or exc}"
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(Path(entry.path), root)
        elif (
            entry.is_symlink()
            and (entry.name.endswith(".md") or entry.is_dir())
            and not inside(Path(entry.path), root)
        ):
            yield Path(entry.path), LEAVES_TREE
        elif entry.is_symlink() and entry.is_dir():
            yield Path(entry.path), "a symbolic link to a directory is not followed"
        elif entry.name.endswith(".md") and entry.is_file():
            yield Path(entry.path), None
        elif entry.name.endswith(".md") and entry.is_symlink():
            yield Path(entry.path), "a symbolic link to nothing"


def default_tiers(home: Path, repo_root: Path | None) -> list[Path]:
    """LoreKit's two tiers: ``~/.lorekit`` and ``<repo>/.lorekit``, those that exist."""
    tiers = [home / ".lorekit"] + ([repo_root / ".lorekit"] if repo_root else [])
    return [t for t in tiers if t.is_dir()]
