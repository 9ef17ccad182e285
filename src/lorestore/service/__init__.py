"""The operations. Each one: authorise -> validate -> one store transaction -> audit.

Transports (MCP, REST, CLI) are thin adapters over these methods; the rules of DESIGN §5
live here and nowhere else, so both backends and every surface behave the same. The
operations are grouped by concern into modules; ``LessonService`` is all of them.
"""

from __future__ import annotations

from lorestore.service.activity import ActivityOperations
from lorestore.service.base import Clock, utcnow
from lorestore.service.capture import CaptureOperations
from lorestore.service.invites import InviteOperations
from lorestore.service.lifecycle import LifecycleOperations
from lorestore.service.orgs import OrgOperations
from lorestore.service.portable import PortableOperations
from lorestore.service.projects import ProjectOperations
from lorestore.service.reads import ReadOperations
from lorestore.service.recall import RecallOperations
from lorestore.service.review import ReviewOperations
from lorestore.service.search import SearchOperations
from lorestore.service.tokens import TokenOperations
from lorestore.service.webhooks import WebhookOperations
from lorestore.service.writes import WriteOperations


class LessonService(
    CaptureOperations,  # before WriteOperations: it extends the write path
    WriteOperations,
    ReadOperations,
    LifecycleOperations,
    ReviewOperations,
    TokenOperations,
    OrgOperations,
    InviteOperations,
    SearchOperations,
    RecallOperations,
    ProjectOperations,
    PortableOperations,
    WebhookOperations,
    ActivityOperations,
):
    """Every lesson operation over one Store."""


__all__ = ["Clock", "LessonService", "utcnow"]
