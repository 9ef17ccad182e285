-- 0014_membership_ranks.sql
--
-- Why: PostgreSQL's migration of the same name makes its row-level policies enforce the
--   ranks of org roles (only an owner makes, changes or removes an owner; a member may
--   leave) that the service checks on both backends. The embedded store has no row-level
--   security; this file keeps the two backends' migration numbers in step, so that a store
--   copied between them (`lorestore migrate`) is at the same schema number on both sides.
-- What changes: nothing in the schema.
-- Tenancy: none.
-- Compatibility: code that ran against the previous migration runs unchanged.
-- Verify: `SELECT number, name FROM schema_migrations` lists this migration.

SELECT 1;
