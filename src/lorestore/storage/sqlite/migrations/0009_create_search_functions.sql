-- 0009_create_search_functions.sql
--
-- Why: keeps migration numbers in step with the PostgreSQL backend, whose 0009 lets searches
--   use the full-text index under row-level security. SQLite has no row-level security.
-- What changes: nothing.
-- Tenancy: none.
-- Compatibility: no-op.
-- Verify: `SELECT * FROM schema_migrations` lists 0009.

SELECT 1;
