-- 0018_freeze_tenant_keys.sql
--
-- Why: PostgreSQL's migration of the same name stops a row from moving between tenants (an
--   org member's `UPDATE lessons SET owner = 'user:me'` took the org's lessons). The embedded
--   store has no row-level security and the service is its boundary, but the same rule costs
--   one trigger per table here too, so both backends refuse the same raw statement.
-- What changes: a BEFORE UPDATE OF <key> trigger per tenant table, aborting when the key
--   changes: owner on lessons, tombstones, scope_policies and foreign_records; principal on
--   tokens; org and member on memberships; org, invitee and created_by on invites; org and
--   created_by on scope_bindings. (Versions and sessions reach their owner through the
--   lesson; audit_log is append-only already.)
-- Tenancy: no row moves between tenants any more.
-- Compatibility: the service never updates a tenant key.
-- Verify: `UPDATE lessons SET owner = 'user:x'` fails with "owner of lessons is immutable".

CREATE TRIGGER lessons_keys_frozen BEFORE UPDATE OF owner ON lessons
    WHEN old.owner IS NOT new.owner BEGIN
    SELECT RAISE(ABORT, 'owner of lessons is immutable: a row stays in its tenant');
END;

CREATE TRIGGER tombstones_keys_frozen BEFORE UPDATE OF owner ON tombstones
    WHEN old.owner IS NOT new.owner BEGIN
    SELECT RAISE(ABORT, 'owner of tombstones is immutable: a row stays in its tenant');
END;

CREATE TRIGGER scope_policies_keys_frozen BEFORE UPDATE OF owner ON scope_policies
    WHEN old.owner IS NOT new.owner BEGIN
    SELECT RAISE(ABORT, 'owner of scope_policies is immutable: a row stays in its tenant');
END;

CREATE TRIGGER foreign_records_keys_frozen BEFORE UPDATE OF owner ON foreign_records
    WHEN old.owner IS NOT new.owner BEGIN
    SELECT RAISE(ABORT, 'owner of foreign_records is immutable: a row stays in its tenant');
END;

CREATE TRIGGER tokens_keys_frozen BEFORE UPDATE OF principal ON tokens
    WHEN old.principal IS NOT new.principal BEGIN
    SELECT RAISE(ABORT, 'principal of tokens is immutable: a row stays in its tenant');
END;

CREATE TRIGGER memberships_keys_frozen BEFORE UPDATE OF org, member ON memberships
    WHEN old.org IS NOT new.org OR old.member IS NOT new.member BEGIN
    SELECT RAISE(ABORT, 'org or member of memberships is immutable: a row stays in its tenant');
END;

CREATE TRIGGER invites_keys_frozen BEFORE UPDATE OF org, invitee, created_by ON invites
    WHEN old.org IS NOT new.org OR old.invitee IS NOT new.invitee OR old.created_by IS NOT new.created_by BEGIN
    SELECT RAISE(ABORT, 'org, invitee or created_by of invites is immutable: a row stays in its tenant');
END;

CREATE TRIGGER scope_bindings_keys_frozen BEFORE UPDATE OF org, created_by ON scope_bindings
    WHEN old.org IS NOT new.org OR old.created_by IS NOT new.created_by BEGIN
    SELECT RAISE(ABORT, 'org or created_by of scope_bindings is immutable: a row stays in its tenant');
END;
