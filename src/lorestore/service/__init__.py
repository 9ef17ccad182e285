"""The operations. Each one: authorise -> validate -> one store transaction -> audit.

Transports (MCP, REST, CLI) are thin adapters over these methods; the rules of DESIGN §5
live here and nowhere else, so both backends and every surface behave the same. The
operations are grouped by concern into modules; ``LessonService`` is all of them.

Importing the package loads none of them: ``LessonService`` (service/lessons.py) and the
names below load on first use, so a process that only recalls (a host's hook, through
composition.build_recall and service/recaller.py) loads neither the other operations nor the
pydantic models they answer with.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lorestore.service.base import Clock, utcnow
    from lorestore.service.lessons import LessonService

_LAZY = {"LessonService": "lorestore.service.lessons", "Clock": "lorestore.service.base",
         "utcnow": "lorestore.service.base"}  # fmt: skip


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = ["Clock", "LessonService", "utcnow"]
