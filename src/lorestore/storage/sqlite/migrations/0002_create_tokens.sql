-- 0002_create_tokens.sql
--
-- Why: every HTTP surface needs a bearer token, and a team hands agents, CI jobs and
--   reviewers tokens of different reach. A token is random, shown once and stored only as
--   its SHA-256 (a high-entropy secret needs no slow hash), so a copy of the database
--   does not hand out access.
-- What changes: creates `tokens` (principal, permission, optional scope patterns and orgs,
--   expiry, revocation, last use).
-- Tenancy: a token belongs to one principal and can only narrow what that principal may do:
--   a permission at most theirs, scope patterns and orgs that restrict, never widen.
-- Compatibility: additive; 0001 tables are untouched.
-- Verify: `lorestore token create --name ci --permission read` prints a token once;
--   `SELECT token_hash FROM tokens` shows only its digest.

CREATE TABLE tokens (
    id            TEXT PRIMARY KEY,
    principal     TEXT NOT NULL REFERENCES principals (id),
    name          TEXT NOT NULL,
    token_hash    TEXT NOT NULL UNIQUE,
    prefix        TEXT NOT NULL,                 -- first characters, to recognise a token
    permission    TEXT NOT NULL CHECK (permission IN ('read', 'write', 'review', 'admin')),
    scopes        TEXT,                          -- JSON array of scope patterns; NULL: any
    orgs          TEXT,                          -- JSON array of org slugs; NULL: any
    created_at    TEXT NOT NULL,
    created_by    TEXT NOT NULL,
    expires_at    TEXT,
    revoked_at    TEXT,
    last_used_at  TEXT
);

CREATE INDEX tokens_principal ON tokens (principal, created_at);
