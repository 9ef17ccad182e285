"""Principals and what they may do: actors, permissions (and, with PostgreSQL, orgs and tokens)."""
