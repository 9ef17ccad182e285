-- 0028_create_webhooks.sql
--
-- Why: review comments on GitHub pull requests are captured as candidate lessons through
--   `POST /webhooks/github` (docs/webhook.md). Each delivery is signed by GitHub with a secret
--   shared with one tenant; the server must find that secret before it knows who the delivery
--   is for, remember which deliveries it has applied (GitHub redelivers), and count what it
--   ignored and why (`lorestore webhook stats`).
-- What changes: three tables. `webhooks` (owner, target): the secret a repository
--   (`acme/app`) or an account (`acme`, every repository of it) signs with, encrypted with the
--   server's key (LORESTORE_WEBHOOK_KEY), and the previous secret with the end of its grace
--   period after a rotation. `webhook_deliveries` (owner, delivery): the deliveries applied,
--   kept for a retention window (the maintenance sweep erases older ones). `webhook_counts`
--   (owner, target, reason): how many deliveries ended each way. Two definer functions:
--   lorestore_webhook_secrets(), which lists every webhook's encrypted secrets, and
--   lorestore_delivery_owners(cutoff), which names the owners whose delivery records the
--   maintenance sweep has to erase (ids only, as lorestore_due_owners does for lessons).
-- Tenancy: all three tables have row-level security forced and keys that start with the
--   owner. Webhooks are managed by the owner (a user) or an org's owners and admins
--   (lorestore_admin_orgs); deliveries and counts are written by the tenant the delivery
--   landed in (the capture acts as that tenant) and read by its members. The first definer
--   function is how a delivery is authenticated before any actor is known, as
--   lorestore_token_by_hash is for a token: it returns ciphertext only, which nothing but the
--   server holding the key can open, and no owner's lessons. The app role may update only
--   the columns the service changes (a secret on rotation, a count, a delivery's outcome), so
--   no row's owner or target ever changes; it deletes only its own owners' rows, and never a
--   count.
-- Compatibility: additive; code of the previous release never reads these tables.
-- Verify: as lorestore_app with no actor set, `SELECT count(*) FROM webhooks` is 0 while
--   `SELECT count(*) FROM lorestore_webhook_secrets()` counts every webhook; with an actor
--   bound, `SELECT * FROM webhook_counts` shows only that actor's owners.

CREATE TABLE webhooks (
    owner           text NOT NULL REFERENCES principals (id),
    target          text NOT NULL CHECK (target ~ '^[a-z0-9._-]+(/[a-z0-9._-]+)?$'),
    id              uuid NOT NULL UNIQUE,
    secret          text NOT NULL,
    previous_secret text,
    previous_until  timestamptz,
    created_at      timestamptz NOT NULL,
    created_by      text NOT NULL,
    rotated_at      timestamptz,
    PRIMARY KEY (owner, target)
);

CREATE TABLE webhook_deliveries (
    owner        text NOT NULL REFERENCES principals (id),
    delivery     text NOT NULL,
    received_at  timestamptz NOT NULL,
    event        text NOT NULL,
    outcome      text NOT NULL,
    PRIMARY KEY (owner, delivery)
);

CREATE INDEX webhook_deliveries_received ON webhook_deliveries (owner, received_at);

CREATE TABLE webhook_counts (
    owner    text NOT NULL REFERENCES principals (id),
    target   text NOT NULL,
    reason   text NOT NULL,
    count    bigint NOT NULL CHECK (count >= 0),
    last_at  timestamptz NOT NULL,
    PRIMARY KEY (owner, target, reason)
);

ALTER TABLE webhooks ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhooks FORCE ROW LEVEL SECURITY;
ALTER TABLE webhook_deliveries ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhook_deliveries FORCE ROW LEVEL SECURITY;
ALTER TABLE webhook_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhook_counts FORCE ROW LEVEL SECURITY;

CREATE POLICY webhooks_admin ON webhooks FOR ALL
    USING (owner = lorestore_actor() OR owner = ANY ((SELECT lorestore_admin_orgs())::text[]))
    WITH CHECK (owner = lorestore_actor()
                OR owner = ANY ((SELECT lorestore_admin_orgs())::text[]));
CREATE POLICY deliveries_read ON webhook_deliveries FOR SELECT
    USING (owner = ANY ((SELECT lorestore_owners())::text[]));
CREATE POLICY deliveries_write ON webhook_deliveries FOR INSERT
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[]));
CREATE POLICY deliveries_settle ON webhook_deliveries FOR UPDATE
    USING (owner = ANY ((SELECT lorestore_writable_owners())::text[]))
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[]));
CREATE POLICY deliveries_sweep ON webhook_deliveries FOR DELETE
    USING (owner = ANY ((SELECT lorestore_writable_owners())::text[]));
CREATE POLICY counts_read ON webhook_counts FOR SELECT
    USING (owner = ANY ((SELECT lorestore_owners())::text[]));
CREATE POLICY counts_write ON webhook_counts FOR INSERT
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[]));
CREATE POLICY counts_update ON webhook_counts FOR UPDATE
    USING (owner = ANY ((SELECT lorestore_writable_owners())::text[]))
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[]));

GRANT SELECT, INSERT, DELETE ON webhooks TO lorestore_app;
GRANT UPDATE (secret, previous_secret, previous_until, rotated_at) ON webhooks TO lorestore_app;
GRANT SELECT, INSERT, DELETE ON webhook_deliveries TO lorestore_app;
GRANT UPDATE (outcome) ON webhook_deliveries TO lorestore_app;
GRANT SELECT, INSERT ON webhook_counts TO lorestore_app;
GRANT UPDATE (count, last_at) ON webhook_counts TO lorestore_app;

-- Every webhook's encrypted secrets: a delivery names its repository only in the body, which
-- is not parsed before its signature holds, so the server tries the secrets it keeps.
CREATE FUNCTION lorestore_webhook_secrets()
    RETURNS TABLE (owner text, target text, id uuid, secret text, previous_secret text,
                   previous_until timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$ SELECT w.owner, w.target, w.id, w.secret, w.previous_secret, w.previous_until
          FROM public.webhooks AS w ORDER BY w.owner, w.target $$;

GRANT SELECT ON webhooks TO lorestore_definer;
ALTER FUNCTION lorestore_webhook_secrets() OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_webhook_secrets() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_webhook_secrets() TO lorestore_app;

-- The owners with delivery records older than the retention cutoff: the maintenance sweep
-- then acts as each of them, under row-level security.
CREATE FUNCTION lorestore_delivery_owners(cutoff timestamptz) RETURNS SETOF text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$ SELECT DISTINCT d.owner FROM public.webhook_deliveries AS d
          WHERE d.received_at < cutoff ORDER BY d.owner $$;

GRANT SELECT ON webhook_deliveries TO lorestore_definer;
ALTER FUNCTION lorestore_delivery_owners(timestamptz) OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_delivery_owners(timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_delivery_owners(timestamptz) TO lorestore_app;
