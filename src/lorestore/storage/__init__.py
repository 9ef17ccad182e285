"""Persistence: the Store protocol, its SQLite and PostgreSQL backends, and migrations."""
