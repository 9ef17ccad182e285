"""LoreKit's protocol on ``lorestore serve``, mounted at ``/lorekit/functions/v1``: its REST
routes (``rest.py``), its MCP tools (``tools.py``, ``mcp.py``), its token forms (``auth.py``),
field names (``fields.py``) and error bodies (``errors.py``), all over lorestore's own service
operations (``adapters.py``). A LoreKit endpoint of ``http://HOST:PORT/lorekit/functions/v1/mcp``
gives LoreKit's CLI its REST base and health URL here (docs/lorekit.md)."""

MOUNT = "/lorekit/functions/v1"
