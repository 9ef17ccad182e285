"""Adapters that carry the catalog's operations over a protocol: MCP (stdio and streamable
HTTP), REST, the dashboard and LoreKit's protocol; and what their long-running servers share."""

from __future__ import annotations


def settle_heap() -> None:
    """For a process that serves many calls (``lorestore serve``, ``lorestore mcp``), once its
    modules, models and store are loaded: collect once, then move every object alive into the
    permanent generation (``gc.freeze``). The collections that each call's garbage triggers
    then walk what calls allocate, not the tens of thousands of objects of start-up: recall's
    p99 at 100k lessons, in process, 23-38 -> 16-22 ms (its p95 within the noise;
    docs/benchmarks.md, "Recall")."""
    import gc

    gc.collect()
    gc.freeze()
