"""The ``lorestore`` command: one sub-command per catalog operation, plus ``mcp``."""
