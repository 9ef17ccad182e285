"""Arguments and results of ``memory_export`` and ``memory_import``: the one schema the CLI
and the REST routes share (the records themselves are described in docs/format.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from lorestore.models import Params, Result

Format = Literal["jsonl", "lorekit"]
State = Literal["active", "archived", "expired", "rejected"]
Outcome = Literal["added", "unchanged", "differs", "refused"]
# How many problems (or LoreKit notes) a result lists; counts are always complete, and the
# CLI prints every problem as it happens.
LISTED = 1000


class ExportParams(Params):
    format: Format = Field(
        "jsonl",
        description="jsonl: lorestore's interchange format; lorekit: a LoreKit directory "
        "tree (CLI only)",
    )
    scopes: list[str] | None = Field(
        None,
        description="only these scopes or patterns such as repo::acme/* (a repo covers its "
        "branches); default: every scope you may read",
    )
    states: list[State] | None = Field(
        None, description="only lessons in these states: active, archived, expired, rejected"
    )
    since: str | None = Field(None, description="only records changed at or after this time")
    until: str | None = Field(None, description="only records changed before this time")
    history: bool = Field(True, description="include every version of each lesson")


class ImportParams(Params):
    format: Format = Field(
        "jsonl", description="jsonl: lorestore's interchange format; lorekit: a LoreKit tree"
    )
    dry_run: bool = Field(
        False, description="check every record and report what would change; write nothing"
    )


class Problem(Result):
    """A record that did not land as it was, or something lorestore could not keep; ``line``
    is its line number in a JSON Lines file, ``path`` its file in a LoreKit tree."""

    line: int | None = None
    path: str | None = None
    type: str | None = None
    id: str | None = None
    scope: str | None = None
    key: str | None = None
    code: str = Field(
        description="invalid_record, rejected_value, forbidden, address_taken, conflict, "
        "target_differs, cap_exceeded, unknown_type, not_kept, scope_mapped (a LoreKit "
        "file's scope imported under its lorestore form; it landed), ..."
    )
    message: str


class Outcomes(Result):
    added: int = Field(0, description="landed (a dry run: would land)")
    unchanged: int = Field(0, description="already held exactly so")
    differs: int = Field(0, description="held in another state; the store's kept")
    refused: int = Field(0, description="refused; see problems")


class ImportResult(Result):
    format: Format
    dry_run: bool
    read: int = Field(description="lines (JSON Lines) or files (LoreKit) read")
    invalid: int = Field(description="lines or files that are not a valid record")
    lessons: Outcomes
    tombstones: Outcomes
    scope_policies: Outcomes
    projects: Outcomes = Field(description="repositories of projects (one record each)")
    unknown: Outcomes = Field(description="records of a type this lorestore does not know")
    unknown_types: dict[str, int] = Field(description="kept records per unknown type")
    problems: list[Problem] = Field(description=f"the first {LISTED} problems")
    problems_total: int


class ExportSummary(Result):
    """What an export wrote (the CLI's --json; over REST the stream itself is the answer)."""

    format: Format
    lessons: int
    tombstones: int
    scope_policies: int
    projects: int = Field(description="repositories of projects (one record each)")
    unknown: int
    withheld: dict[str, int] = Field(
        description="records not written, by reason (e.g. rejected lessons for a reader "
        "without the review permission)"
    )
    not_kept: dict[str, int] = Field(
        default_factory=dict,
        description="LoreKit: what its files cannot hold, by kind (history, trust, ...)",
    )
    files: dict[str, int] = Field(
        default_factory=dict, description="LoreKit: files written and unchanged"
    )
    notes: list[Problem] = Field(default_factory=list, description=f"the first {LISTED} notes")
