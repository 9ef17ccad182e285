-- 0016_version_deletes.sql
--
-- Why: PostgreSQL's migration of the same name narrows who may delete an org's lesson
--   versions in raw SQL (the rule the service keeps on both backends). The embedded store has
--   no roles or row-level security; this file keeps the two backends' migration numbers in
--   step, so that a store copied between them (`lorestore migrate`) is at the same schema
--   number on both sides.
-- What changes: nothing in the schema.
-- Tenancy: none.
-- Compatibility: code that ran against the previous migration runs unchanged.
-- Verify: `SELECT number, name FROM schema_migrations` lists this migration.

SELECT 1;
