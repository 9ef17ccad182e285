"""JSON Lines reading and writing: the header line, one object per line, and a line splitter
over a stream of byte chunks that never holds more than one line (so memory stays flat for a
file of any length)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_json

from lorestore import __version__
from lorestore.core.jsontext import compact_encoder

FORMAT = "lorestore-jsonl"
VERSION = 1
MEDIA_TYPE = "application/x-ndjson"
# A lesson line holds at most 64 KiB of value per version; a long history can be large, but
# not this large. A longer line is reported and skipped, never buffered whole.
MAX_LINE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Incoming:
    """One record as read: where it came from, and the object, or why it is not one."""

    line: int | None = None
    path: str | None = None
    record: dict[str, Any] | None = None
    error: str | None = None


class HeaderError(ValueError):
    """A header this lorestore cannot read the file under (another format, a newer version)."""


def split_lines(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes | None]]:
    """The lines of a byte stream, numbered from 1; an over-long line comes as None."""
    number = 0
    pending = bytearray()
    skipping = False
    for chunk in chunks:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            number += 1
            if skipping:
                yield number, None
            elif pending:
                pending += chunk[start:end]
                yield number, _bounded(bytes(pending))
            else:
                yield number, _bounded(chunk[start:end])
            pending.clear()
            skipping = False
            start = end + 1
        if not skipping:
            pending += chunk[start:]
            if len(pending) > MAX_LINE_BYTES:
                pending.clear()
                skipping = True
    if pending or skipping:
        yield number + 1, None if skipping else bytes(pending)


def _bounded(line: bytes) -> bytes | None:
    return None if len(line) > MAX_LINE_BYTES else line


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    """A JSON number as a float; one too large for a float (``1e400``) is refused rather than
    read as Infinity, which is not JSON and which PostgreSQL's jsonb cannot hold."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text} is too large for a float")
    return value


# Built once: json.loads with an argument builds a decoder (and its scanner) per call.
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)


def decode_value(text: str) -> Any:
    """One JSON value as both stores can hold it: no NaN or Infinity, no number too large for
    a float, no NUL or lone surrogate in a string (ValueError otherwise)."""
    value = _DECODER.decode(text)
    if not _storable(value):
        raise ValueError("a string holds NUL or a lone surrogate")
    return value


def decode(number: int, raw: bytes | None) -> Incoming | None:
    """One line as a record, or as the reason it is not one; None for a blank line."""
    if raw is None:
        return Incoming(line=number, error=f"the line is longer than {MAX_LINE_BYTES} bytes")
    try:
        text = raw.decode("utf-8").strip().removeprefix("\ufeff")
        if not text:
            return None
        value = _DECODER.decode(text)
    except (UnicodeDecodeError, ValueError) as exc:
        return Incoming(line=number, error=f"not a JSON object: {exc}")
    except RecursionError:
        return Incoming(line=number, error="not a JSON object: nested too deeply")
    if not isinstance(value, dict):
        return Incoming(line=number, error="a line must hold one JSON object")
    if "\\u" in text and not _storable(value):
        return Incoming(line=number, error="a string holds NUL or a lone surrogate")
    return Incoming(line=number, record=value)


def _storable(value: Any) -> bool:
    """Whether every string can be stored as UTF-8 text by both backends (PostgreSQL refuses
    NUL in text)."""
    if isinstance(value, str):
        return "\x00" not in value and not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, dict):
        return all(_storable(k) and _storable(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_storable(v) for v in value)
    return True


def read_records(chunks: Iterable[bytes]) -> Iterator[Incoming]:
    for number, raw in split_lines(chunks):
        incoming = decode(number, raw)
        if incoming is not None:
            yield incoming


# allow_nan=False: a non-finite float raises rather than being written as NaN or Infinity.
_encode = compact_encoder(sort_keys=False, allow_nan=False)


class PlainRecord(dict[str, Any]):
    """A record made of lorestore's own fields only: strings, integers, booleans, null, and
    lists and objects of them, never a float (a lesson without extension fields). For such
    values pydantic-core writes the same text as the json module, three times faster; a
    record that may carry a foreign float keeps the json module's spelling of it (1e-07) and
    its refusal of NaN and Infinity."""


def encode(record: Mapping[str, Any]) -> bytes:
    if type(record) is PlainRecord:
        return to_json(record) + b"\n"
    return _encode(record).encode("utf-8") + b"\n"


def header(exported_at: str, **source: Any) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": exported_at,
        "source": {"tool": "lorestore", "version": __version__, **source},
    }


def is_header(record: Mapping[str, Any]) -> bool:
    return "type" not in record and "format" in record


def check_header(record: Mapping[str, Any]) -> None:
    """Refuse a file of another format, or of a newer major version than this one reads."""
    if record.get("format") != FORMAT:
        raise HeaderError(f"the file's format is {record.get('format')!r}, not {FORMAT!r}")
    version = record.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise HeaderError(f"the header's version {version!r} is not a positive integer")
    if version > VERSION:
        raise HeaderError(
            f"the file is {FORMAT} version {version}; this lorestore reads up to {VERSION}"
        )
