-- 0013_binding_claims.sql
--
-- Why: PostgreSQL's migration of the same name adds the function with which a scope binding
--   checks, past row-level security, that no other owner keeps lessons at the scopes it
--   would claim. The embedded store has no row-level security and runs the same check as a
--   plain query; this file keeps the two backends' migration numbers in step, so that a
--   store copied between them (`lorestore migrate`) is at the same schema number on both.
-- What changes: nothing in the schema.
-- Tenancy: none.
-- Compatibility: code that ran against the previous migration runs unchanged.
-- Verify: `SELECT number, name FROM schema_migrations` lists this migration.

SELECT 1;
