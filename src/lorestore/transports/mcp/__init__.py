"""MCP tools built from the operation catalog, served over stdio."""
