"""lorestore: a lesson store for coding agents; it keeps every version and remembers corrections."""

__version__ = "0.1.0"
