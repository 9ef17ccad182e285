"""``LessonService``: every group of operations (this package's modules) over one store."""

from __future__ import annotations

from lorestore.service.activity import ActivityOperations
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
