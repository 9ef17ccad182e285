"""Unknown fields of a list item come back on the item they came from however its identifying
number was written: a version written as ``1.0`` is version 1, on import and on export."""

from __future__ import annotations

import json

from tests.portable import T0, export_lines, header, import_lines, lesson, line

from lorestore.service import LessonService


def test_an_unknown_field_of_a_version_written_as_a_float_comes_back(
    service: LessonService,
) -> None:
    version = {
        "version": 1.0,
        "state": "accepted",
        "value": "Use uv.",
        "recorded_at": T0,
        "actor": "user:x",
        "x_q": 1,
    }
    record = lesson("uv", "Use uv.", versions=[version])
    result = import_lines(service, [header(), line(record)])
    assert result.lessons.added == 1 and result.problems == []
    (written,) = [json.loads(x) for x in export_lines(service, history=True)[1:]]
    (back,) = written["versions"]
    assert back["version"] == 1 and back["x_q"] == 1


def test_a_version_that_is_not_a_whole_number_is_still_refused(service: LessonService) -> None:
    version = {"version": 1.5, "state": "accepted", "value": "Use uv.", "recorded_at": T0}
    version["actor"] = "user:x"
    result = import_lines(service, [header(), line(lesson("uv", "Use uv.", versions=[version]))])
    assert result.invalid == 1 and result.lessons.added == 0
    (problem,) = result.problems
    assert "version: Input should be a valid integer" in problem.message
