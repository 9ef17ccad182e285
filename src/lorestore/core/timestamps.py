"""Timestamps as lorestore writes them: UTC strings in one fixed-width form
(``2026-11-30T05:33:23.123456Z``), so they sort as text in every backend and print identically
on every surface. Without pydantic: the stores and the hooks use them before (or without)
any record model."""

from __future__ import annotations

from datetime import UTC, datetime

from lorestore.core.errors import LorestoreError


def format_ts(moment: datetime, *, field: str = "time") -> str:
    """The canonical text of an aware datetime, in UTC: ``2026-11-30T12:00:00.000000Z``.
    ``isoformat`` pads the year to four digits (``strftime("%Y")`` writes year 1 as ``1``,
    which is not ISO 8601 and sorts after 2026) and is twice as fast."""
    try:
        utc = moment.astimezone(UTC)
    except OverflowError as exc:
        raise _out_of_range(field, moment.isoformat()) from exc
    return utc.isoformat(timespec="microseconds")[:-6] + "Z"


def parse_ts(text: str, *, field: str = "time") -> datetime:
    """Parse ISO 8601 (``Z`` or an offset; a date alone means midnight UTC), as UTC."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except (ValueError, AttributeError) as exc:
        raise LorestoreError(
            "invalid_time",
            f"{field} {text!r} is not an ISO 8601 time",
            hint="use e.g. 2026-11-30T12:00:00Z or 2026-11-30",
        ) from exc
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError as exc:
        # 0001-01-01T00:00+01:00 is in year 0 in UTC, 9999-12-31T23:30-01:00 in year 10000.
        raise _out_of_range(field, text) from exc


def _out_of_range(field: str, text: str) -> LorestoreError:
    return LorestoreError(
        "invalid_time",
        f"{field} {text!r} is outside the years 1 to 9999 in UTC",
        hint="give a time between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z",
    )


def normalise_ts(text: str | None, *, field: str = "time") -> str | None:
    return None if text is None else format_ts(parse_ts(text, field=field))
