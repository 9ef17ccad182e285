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
--   (owner, target, reason): how many deliveries ended each way.
-- Tenancy: keys start with the owner, as on PostgreSQL (where row-level security confines
--   each table to its owner; the embedded store has one person); a row's owner never changes
--   (triggers, as migration 0018 keeps the other tenant tables' keys).
-- Compatibility: additive; code of the previous release never reads these tables.
-- Verify: `lorestore webhook add acme/app` then `sqlite3 lorestore.db 'SELECT owner, target,
--   substr(secret, 1, 6) FROM webhooks'` shows a Fernet token (gAAAAA...), never the secret.

CREATE TABLE webhooks (
    owner           TEXT NOT NULL REFERENCES principals (id),
    target          TEXT NOT NULL,
    id              TEXT NOT NULL UNIQUE,
    secret          TEXT NOT NULL,
    previous_secret TEXT,
    previous_until  TEXT,
    created_at      TEXT NOT NULL,
    created_by      TEXT NOT NULL,
    rotated_at      TEXT,
    PRIMARY KEY (owner, target)
);

CREATE TABLE webhook_deliveries (
    owner        TEXT NOT NULL REFERENCES principals (id),
    delivery     TEXT NOT NULL,
    received_at  TEXT NOT NULL,
    event        TEXT NOT NULL,
    outcome      TEXT NOT NULL,
    PRIMARY KEY (owner, delivery)
);

CREATE INDEX webhook_deliveries_received ON webhook_deliveries (owner, received_at);

CREATE TABLE webhook_counts (
    owner    TEXT NOT NULL REFERENCES principals (id),
    target   TEXT NOT NULL,
    reason   TEXT NOT NULL,
    count    INTEGER NOT NULL CHECK (count >= 0),
    last_at  TEXT NOT NULL,
    PRIMARY KEY (owner, target, reason)
);

CREATE TRIGGER webhooks_keys_frozen BEFORE UPDATE OF owner ON webhooks
    WHEN old.owner IS NOT new.owner BEGIN
    SELECT RAISE(ABORT, 'owner of webhooks is immutable: a row stays in its tenant');
END;

CREATE TRIGGER webhook_deliveries_keys_frozen BEFORE UPDATE OF owner ON webhook_deliveries
    WHEN old.owner IS NOT new.owner BEGIN
    SELECT RAISE(ABORT, 'owner of webhook_deliveries is immutable: a row stays in its tenant');
END;

CREATE TRIGGER webhook_counts_keys_frozen BEFORE UPDATE OF owner ON webhook_counts
    WHEN old.owner IS NOT new.owner BEGIN
    SELECT RAISE(ABORT, 'owner of webhook_counts is immutable: a row stays in its tenant');
END;
