-- 0017_create_store_settings.sql
--
-- Why: a LoreKit lesson has no id; an import derives one from its owner and address, so that
--   the same tree imported twice finds what the first import added. It was derived from a
--   constant in the source (uuid5), so anyone could compute another user's ids, import one
--   first in their own tenant and so block that user's import (`id_taken`, which also told
--   them the address existed). Security issue 19, item 14. Ids are now derived with a secret
--   of this store, drawn here once, that no operation returns.
-- What changes: a table `store_settings` (name, value) of settings that belong to the store
--   as a whole, not to a tenant; one row, `id_secret`: two gen_random_uuid() in hex (244
--   random bits from the server's strong random source, pg_strong_random).
-- Tenancy: not a tenant table (no owner). Row-level security is enabled and forced like on
--   every table, with a policy that lets the app role read the settings; it may SELECT only
--   (no INSERT, UPDATE or DELETE grant): the secret is the store's, set by this migration.
-- Compatibility: additive. Lessons imported before keep their ids; importing their tree
--   again finds them by address, as it finds a lesson written in lorestore.
-- Verify: as lorestore_app, `SELECT count(*) FROM store_settings` is 1 and
--   `UPDATE store_settings SET value = ''` fails with permission denied.

CREATE TABLE store_settings (
    name   text PRIMARY KEY,
    value  text NOT NULL
);

-- Drawn before row-level security is forced: no policy lets anyone insert afterwards.
INSERT INTO store_settings (name, value)
VALUES ('id_secret', replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''));

ALTER TABLE store_settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE store_settings FORCE ROW LEVEL SECURITY;

CREATE POLICY store_settings_read ON store_settings FOR SELECT USING (true);

GRANT SELECT ON store_settings TO lorestore_app;
