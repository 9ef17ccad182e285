-- 0011_recall_create_addresses.sql
--
-- Why: the embedded store's migration of the same name gives recall's full-text pass a
--   small table to check each match's address in (owner, scope; active, not rejected)
--   before ranking it, instead of ranking every match in every scope. PostgreSQL needs no
--   change for that: recall's hits come from lorestore_search_hits (migration 0009), whose
--   WHERE clause already keeps only matches on the ladder's (owner, scope) pairs, active and
--   not rejected, before ts_rank_cd ranks them. This file keeps the two backends' migration
--   numbers in step, so that a store copied between them (`lorestore migrate`) is at the
--   same schema number on both sides.
-- What changes: nothing in the schema.
-- Tenancy: none.
-- Compatibility: nothing to be compatible with; code that ran against the previous
--   migration runs unchanged.
-- Verify: `SELECT number, name FROM schema_migrations` lists this migration; recall returns
--   the same lessons as before.

SELECT 1;
