"""Adapters that carry the catalog's operations over a protocol: MCP now, HTTP later."""
