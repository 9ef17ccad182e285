-- 0020_invite_lifecycle.sql
--
-- Why: an invite outlived its creator's standing (an admin removed from an org kept every
--   code it had handed out) and could not be taken back.
-- What changes: invites gain revoked_at and revoked_by (NULL when the invite was voided
--   because its creator lost the right to issue it); a trigger voids the pending invites of
--   a member who leaves or is removed, or is demoted below admin (and its owner invites when
--   it stops being an owner). Accepting an invite now also needs it not revoked.
-- Tenancy: the embedded store's boundary is the service; the trigger keeps the rule for
--   every path that removes a member.
-- Compatibility: additive; existing invites are unrevoked.
-- Verify: after `lorestore org remove acme bob`, bob's pending invites show revoked_at.

ALTER TABLE invites ADD COLUMN revoked_at TEXT;
ALTER TABLE invites ADD COLUMN revoked_by TEXT;

CREATE TRIGGER memberships_void_invites_removed AFTER DELETE ON memberships
    WHEN old.role IN ('owner', 'admin') BEGIN
    UPDATE invites SET revoked_at = strftime('%Y-%m-%dT%H:%M:%f000Z', 'now')
    WHERE org = old.org AND created_by = old.member
      AND accepted_at IS NULL AND revoked_at IS NULL;
END;

CREATE TRIGGER memberships_void_invites_demoted AFTER UPDATE OF role ON memberships
    WHEN old.role IN ('owner', 'admin') BEGIN
    UPDATE invites SET revoked_at = strftime('%Y-%m-%dT%H:%M:%f000Z', 'now')
    WHERE org = old.org AND created_by = old.member
      AND accepted_at IS NULL AND revoked_at IS NULL
      AND (new.role NOT IN ('owner', 'admin') OR (old.role = 'owner' AND new.role <> 'owner'
                                                  AND invites.role = 'owner'));
END;
