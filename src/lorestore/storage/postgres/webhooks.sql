-- name: insert_webhook
-- Bind a target to an owner, unless that owner has bound it already.
INSERT INTO webhooks (owner, target, id, secret, created_at, created_by)
VALUES (%(owner)s, %(target)s, %(id)s::uuid, %(secret)s, %(created_at)s::timestamptz, %(created_by)s)
ON CONFLICT (owner, target) DO NOTHING;

-- name: webhooks_of
-- The webhooks of some owners.
SELECT * FROM webhooks WHERE owner = ANY (%(owners)s)
ORDER BY owner COLLATE "C", target COLLATE "C";

-- name: rotate_webhook
-- A new secret; the current one stays accepted until previous_until.
UPDATE webhooks SET previous_secret = secret, secret = %(secret)s,
    previous_until = %(previous_until)s::timestamptz, rotated_at = %(at)s::timestamptz
WHERE owner = %(owner)s AND target = %(target)s;

-- name: delete_webhook
-- Remove a webhook (its counts stay, as history of what it received).
DELETE FROM webhooks WHERE owner = %(owner)s AND target = %(target)s;

-- name: webhook_secrets
-- Every webhook's encrypted secrets, to find the one a delivery is signed with.
SELECT * FROM lorestore_webhook_secrets();

-- name: claim_delivery
-- Record a delivery, unless it was recorded before (a replay).
INSERT INTO webhook_deliveries (owner, delivery, received_at, event, outcome)
VALUES (%(owner)s, %(delivery)s, %(at)s::timestamptz, %(event)s, 'pending')
ON CONFLICT (owner, delivery) DO NOTHING;

-- name: settle_delivery
-- How a delivery ended.
UPDATE webhook_deliveries SET outcome = %(outcome)s WHERE owner = %(owner)s AND delivery = %(delivery)s;

-- name: count_webhook
-- One more delivery of a webhook that ended this way.
INSERT INTO webhook_counts (owner, target, reason, count, last_at)
VALUES (%(owner)s, %(target)s, %(reason)s, 1, %(at)s::timestamptz)
ON CONFLICT (owner, target, reason) DO UPDATE SET count = webhook_counts.count + 1, last_at = excluded.last_at;

-- name: webhook_counts
-- The counts of some owners' webhooks.
SELECT * FROM webhook_counts WHERE owner = ANY (%(owners)s)
ORDER BY owner COLLATE "C", target COLLATE "C", reason COLLATE "C";

-- name: purge_deliveries
-- Delivery records past their retention.
DELETE FROM webhook_deliveries WHERE owner = %(owner)s AND received_at < %(cutoff)s::timestamptz;

-- name: delivery_owners
-- Owners with delivery records past their retention.
SELECT lorestore_delivery_owners(%(cutoff)s::timestamptz) AS owner;
