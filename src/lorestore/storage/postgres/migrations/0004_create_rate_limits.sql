-- 0004_create_rate_limits.sql
--
-- Why: a per-token request budget (default 600 a minute) kept in the store, so every
--   server process sharing the database counts against the same budget. One row per token
--   holds the current fixed window and its count: checking costs one upsert (a row lock on
--   that token only), whatever the traffic.
-- What changes: creates token_usage with RLS.
-- Tenancy: a principal reads and updates only the usage rows of its own tokens.
-- Compatibility: additive.
-- Verify: as lorestore_app with actor user:bob, rows of user:alice's tokens are invisible.

CREATE TABLE token_usage (
    token_id      uuid PRIMARY KEY REFERENCES tokens (id) ON DELETE CASCADE,
    principal     text NOT NULL,
    window_start  timestamptz NOT NULL,
    requests      integer NOT NULL
);

ALTER TABLE token_usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE token_usage FORCE ROW LEVEL SECURITY;

CREATE POLICY token_usage_own ON token_usage FOR ALL
    USING (principal = lorestore_actor())
    WITH CHECK (principal = lorestore_actor());

GRANT SELECT, INSERT, UPDATE ON token_usage TO lorestore_app;
