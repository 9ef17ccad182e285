-- 0024_plan_search_hits.sql
--
-- Why: keeps migration numbers in step with the PostgreSQL backend, whose migration of this
--   name reads the actor's owners once per search instead of once per matching lesson.
--   SQLite has no row-level security and no such function.
-- What changes: nothing.
-- Tenancy: none.
-- Compatibility: no-op.
-- Verify: `SELECT * FROM schema_migrations` lists it.

SELECT 1;
