"""Remote mode for the two streaming operations: ``lorestore export`` reads the server's NDJSON
stream, ``lorestore import`` sends the file as the request body while it reads it. Neither
side holds the whole file."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import httpx2
from pydantic import ValidationError

from lorestore import __version__
from lorestore.core.errors import LorestoreError
from lorestore.portable.jsonl import MEDIA_TYPE
from lorestore.portable.models import ExportParams, ImportParams, ImportResult
from lorestore.transports.http import API_PREFIX, caller_headers
from lorestore.transports.http.client import error_from

# An import answers once the whole body is read and applied; allow for a large file.
TIMEOUT_SECONDS = 600.0


class StreamingClient:
    def __init__(
        self, url: str, token: str, *, session: str | None = None, agent: str | None = None
    ) -> None:
        self.url = url
        headers = {"Authorization": f"Bearer {token}", "User-Agent": f"lorestore/{__version__}"}
        self._http = httpx2.Client(
            base_url=url, headers=caller_headers(headers, session, agent), timeout=TIMEOUT_SECONDS
        )

    def export_chunks(self, params: ExportParams) -> Iterator[bytes]:
        """The server's export stream, chunk by chunk as it arrives."""
        body = params.model_copy(update={"format": "jsonl"}).model_dump_json(exclude_unset=True)
        try:
            with self._http.stream(
                "POST",
                f"{API_PREFIX}/memory_export",
                content=body,
                headers={"Content-Type": "application/json"},
            ) as response:
                if response.status_code != 200:
                    response.read()
                    raise error_from(response)
                yield from response.iter_bytes()
        except httpx2.TransportError as exc:
            raise _unreachable(self.url, exc) from None

    def import_chunks(self, params: ImportParams, chunks: Iterable[bytes]) -> ImportResult:
        """Send the records as the request body, a chunk at a time; the server's result."""
        query = {"format": params.format, "dry_run": str(params.dry_run).lower()}
        try:
            response = self._http.post(
                f"{API_PREFIX}/memory_import",
                params=query,
                content=iter(chunks),
                headers={"Content-Type": MEDIA_TYPE},
            )
        except httpx2.TransportError as exc:
            raise _unreachable(self.url, exc) from None
        if response.status_code != 200:
            raise error_from(response)
        try:
            return ImportResult.model_validate_json(response.content)
        except ValidationError:
            raise LorestoreError(
                "internal",
                "the server's answer to memory_import does not match this client's schema",
                hint="run the same lorestore version on the server and here",
            ) from None

    def close(self) -> None:
        self._http.close()


def _unreachable(url: str, exc: Exception) -> LorestoreError:
    return LorestoreError(
        "config_error",
        f"cannot reach the lorestore server at {url}: {exc}",
        hint="start it with `lorestore serve`, check LORESTORE_URL, or unset it",
    )
