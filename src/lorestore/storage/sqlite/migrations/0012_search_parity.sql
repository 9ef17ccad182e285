-- 0012_search_parity.sql
--
-- Why: PostgreSQL's migration of the same name makes its full-text index find what FTS5's
--   unicode61 tokenizer finds here (file-name parts in keys and tags, paths, accents folded,
--   the final sigma) and breaks ties of equal score oldest first, as FTS5's rank order does
--   here. The embedded store needs no change; this file keeps the two backends'
--   migration numbers in step, so that a store copied between them (`lorestore migrate`) is
--   at the same schema number on both sides.
-- What changes: nothing in the schema.
-- Tenancy: none.
-- Compatibility: code that ran against the previous migration runs unchanged.
-- Verify: `SELECT number, name FROM schema_migrations` lists this migration.

SELECT 1;
