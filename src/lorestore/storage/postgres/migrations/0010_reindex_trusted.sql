-- 0010_reindex_trusted.sql
--
-- Why: keeps migration numbers in step with the embedded backend, whose 0010 rebuilds an index
--   its planner was passing over. PostgreSQL's planner, with statistics, picks the partial
--   lessons_trusted index of 0005 already.
-- What changes: nothing.
-- Tenancy: none.
-- Compatibility: no-op.
-- Verify: `SELECT number FROM schema_migrations` lists 10.

SELECT 1;
