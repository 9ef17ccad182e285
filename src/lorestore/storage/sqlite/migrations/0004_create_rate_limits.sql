-- 0004_create_rate_limits.sql
--
-- Why: a per-token request budget (default 600 a minute) kept in the store, so every
--   server process sharing the database counts against the same budget. One row per token
--   holds the current fixed window and its count: checking costs one upsert, whatever the
--   traffic.
-- What changes: creates token_usage.
-- Tenancy: a token's usage is its principal's; the service reads and writes only the row of
--   the token that was just authenticated.
-- Compatibility: additive.
-- Verify: after a request with a token, `SELECT * FROM token_usage` shows its window.

CREATE TABLE token_usage (
    token_id      TEXT PRIMARY KEY REFERENCES tokens (id) ON DELETE CASCADE,
    window_start  TEXT NOT NULL,
    requests      INTEGER NOT NULL
);
