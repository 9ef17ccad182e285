"""Portable records: the lorestore-jsonl interchange format (``jsonl``, ``shapes``,
``records``, ``lorestore-jsonl.schema.json``), the LoreKit local store (``lorekit``), and the
runners of ``lorestore import`` / ``export`` (``importer``, ``exporter``). docs/format.md."""

from importlib import resources

SCHEMA_FILE = "lorestore-jsonl.schema.json"


def schema_text() -> str:
    """The JSON Schema of one line of the interchange format, as shipped in the package."""
    return resources.files(__name__).joinpath(SCHEMA_FILE).read_text("utf-8")
