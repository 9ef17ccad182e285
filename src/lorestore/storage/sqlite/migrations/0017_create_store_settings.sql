-- 0017_create_store_settings.sql
--
-- Why: a LoreKit lesson has no id; an import derives one from its owner and address, so that
--   the same tree imported twice finds what the first import added. It was derived from a
--   constant in the source (uuid5), so anyone could compute another user's ids, import one
--   first and so block that user's import (`id_taken`, which also told them the address
--   existed). Security issue 19, item 14. Ids are now derived with a secret of this store,
--   drawn here once, that no operation returns.
-- What changes: a table `store_settings` (name, value) of settings that belong to the store
--   as a whole, not to a tenant; one row, `id_secret`, 256 bits from randomblob() (SQLite's
--   cryptographic random source), hex.
-- Tenancy: not a tenant table (no owner); the embedded store has no row-level security.
-- Compatibility: additive. Lessons imported before keep their ids; importing their tree
--   again finds them by address, as it finds a lesson written in lorestore.
-- Verify: `SELECT name, length(value) FROM store_settings` is one row, id_secret, 64.

CREATE TABLE store_settings (
    name   TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);

INSERT INTO store_settings (name, value) VALUES ('id_secret', lower(hex(randomblob(32))));
