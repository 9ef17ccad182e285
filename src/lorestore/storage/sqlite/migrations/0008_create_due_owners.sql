-- 0008_create_due_owners.sql
--
-- Why: keeps migration numbers in step with the PostgreSQL backend, whose 0008 adds the
--   function the maintenance sweeps use to find every owner with lessons due for erasure.
--   SQLite needs no function: the store asks with a plain query (queries.sql, due_owners).
-- What changes: nothing.
-- Tenancy: none.
-- Compatibility: no-op.
-- Verify: `SELECT * FROM schema_migrations` lists 0008.

SELECT 1;
