-- 0002_create_tokens.sql
--
-- Why: HTTP surfaces authenticate with bearer tokens. A token is random, shown once and
--   stored only as its SHA-256, so a copy of the database does not hand out access.
-- What changes: creates `tokens` and the definer function `lorestore_token_by_hash`, which
--   is how a request is authenticated before any actor is known.
-- Tenancy: a principal sees and manages only its own tokens (RLS on `principal`). The lookup
--   function takes the presented secret's hash, which is a credential, not an identity: it
--   returns at most the one token whose hash matches, and never lists others.
-- Compatibility: additive.
-- Verify: as lorestore_app with no actor set, `SELECT count(*) FROM tokens` is 0, while
--   `SELECT * FROM lorestore_token_by_hash('<hash>')` finds exactly that token.

CREATE TABLE tokens (
    id            uuid PRIMARY KEY,
    principal     text NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    name          text NOT NULL,
    token_hash    text NOT NULL UNIQUE,
    prefix        text NOT NULL,
    permission    text NOT NULL CHECK (permission IN ('read', 'write', 'review', 'admin')),
    scopes        jsonb,
    orgs          jsonb,
    created_at    timestamptz NOT NULL,
    created_by    text NOT NULL,
    expires_at    timestamptz,
    revoked_at    timestamptz,
    last_used_at  timestamptz
);

CREATE INDEX tokens_principal ON tokens (principal, created_at);

ALTER TABLE tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE tokens FORCE ROW LEVEL SECURITY;

CREATE POLICY tokens_own ON tokens FOR ALL
    USING (principal = lorestore_actor())
    WITH CHECK (principal = lorestore_actor() AND created_by = lorestore_actor());

GRANT SELECT, INSERT, UPDATE ON tokens TO lorestore_app;

CREATE FUNCTION lorestore_token_by_hash(presented_hash text) RETURNS SETOF tokens
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
    AS $$ SELECT * FROM tokens WHERE token_hash = presented_hash $$;

GRANT SELECT ON tokens TO lorestore_definer;
ALTER FUNCTION lorestore_token_by_hash(text) OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_token_by_hash(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_token_by_hash(text) TO lorestore_app;
