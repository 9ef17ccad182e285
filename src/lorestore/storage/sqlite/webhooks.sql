-- name: insert_webhook
-- Bind a target to an owner, unless that owner has bound it already.
INSERT INTO webhooks (owner, target, id, secret, created_at, created_by)
VALUES (:owner, :target, :id, :secret, :created_at, :created_by)
ON CONFLICT (owner, target) DO NOTHING;

-- name: webhooks_of
-- The webhooks of some owners.
SELECT * FROM webhooks WHERE owner IN (SELECT value FROM json_each(:owners))
ORDER BY owner, target;

-- name: rotate_webhook
-- A new secret; the current one stays accepted until previous_until.
UPDATE webhooks SET previous_secret = secret, secret = :secret,
    previous_until = :previous_until, rotated_at = :at
WHERE owner = :owner AND target = :target;

-- name: delete_webhook
-- Remove a webhook (its counts stay, as history of what it received).
DELETE FROM webhooks WHERE owner = :owner AND target = :target;

-- name: webhook_secrets
-- Every webhook's encrypted secrets, to find the one a delivery is signed with.
SELECT owner, target, id, secret, previous_secret, previous_until FROM webhooks
ORDER BY owner, target;

-- name: claim_delivery
-- Record a delivery, unless it was recorded before (a replay).
INSERT INTO webhook_deliveries (owner, delivery, received_at, event, outcome)
VALUES (:owner, :delivery, :at, :event, 'pending')
ON CONFLICT (owner, delivery) DO NOTHING;

-- name: settle_delivery
-- How a delivery ended.
UPDATE webhook_deliveries SET outcome = :outcome WHERE owner = :owner AND delivery = :delivery;

-- name: count_webhook
-- One more delivery of a webhook that ended this way.
INSERT INTO webhook_counts (owner, target, reason, count, last_at)
VALUES (:owner, :target, :reason, 1, :at)
ON CONFLICT (owner, target, reason) DO UPDATE SET count = count + 1, last_at = excluded.last_at;

-- name: webhook_counts
-- The counts of some owners' webhooks.
SELECT * FROM webhook_counts WHERE owner IN (SELECT value FROM json_each(:owners))
ORDER BY owner, target, reason;

-- name: purge_deliveries
-- Delivery records past their retention.
DELETE FROM webhook_deliveries WHERE owner = :owner AND received_at < :cutoff;

-- name: delivery_owners
-- Owners with delivery records past their retention.
SELECT DISTINCT owner FROM webhook_deliveries WHERE received_at < :cutoff ORDER BY owner;
