"""The blob a review comment depends on: the git blob id of the commented file at the comment's
commit, read from GitHub's contents API (``GET /repos/{repo}/contents/{path}?ref={commit}``,
whose ``sha`` is that id). A captured lesson names it in ``depends_on``, so recall's ``files``
revision policy holds the lesson once the file has changed."""

from __future__ import annotations

import logging
import re
from urllib.parse import quote

from lorestore import __version__

LOG = logging.getLogger("lorestore.ingest")
TIMEOUT_SECONDS = 5.0  # a delivery waits at most this long for GitHub; GitHub's own limit is 10 s
_BLOB = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")  # SHA-1, or SHA-256 repositories


def file_blob(api: str, token: str, repo: str, path: str, commit: str) -> str | None:
    """The blob id of ``path`` in ``repo`` at ``commit``; None when GitHub does not say (no
    such file, a folder, no access, GitHub unreachable): the lesson is kept without it and the
    cause is logged."""
    import httpx2  # only a delivery with a token configured pays for the import

    url = f"{api}/repos/{quote(repo, safe='/')}/contents/{quote(path, safe='/')}"
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/vnd.github.object+json",
        "X-GitHub-Api-Version": "2022-11-28",
        "User-Agent": f"lorestore/{__version__}",
    }
    try:
        response = httpx2.get(url, params={"ref": commit}, headers=headers, timeout=TIMEOUT_SECONDS)
    except httpx2.HTTPError as exc:
        LOG.warning("depends_on of %s:%s not read: %s", repo, path, type(exc).__name__)
        return None
    if response.status_code != 200:
        LOG.warning(
            "depends_on of %s:%s not read: GitHub answered %s", repo, path, response.status_code
        )
        return None
    try:
        body = response.json()
    except ValueError:
        body = None
    sha = body.get("sha") if isinstance(body, dict) and body.get("type") == "file" else None
    if not isinstance(sha, str) or not _BLOB.fullmatch(sha):
        LOG.warning("depends_on of %s:%s not read: not a file's blob", repo, path)
        return None
    return sha
