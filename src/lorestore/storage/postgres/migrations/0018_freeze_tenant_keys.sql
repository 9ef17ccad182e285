-- 0018_freeze_tenant_keys.sql
--
-- Why: the row-level policies check a row's owner on USING and WITH CHECK, which keeps a
--   write inside the owners the actor may write, but not inside the row's own tenant: a
--   member of org:acme could `UPDATE lessons SET owner = 'user:me' WHERE owner = 'org:acme'`
--   (both owners are writable for it), take the org's lessons into its own tenant and delete
--   them there, while their versions kept the old owner and the active-lesson counters
--   drifted. An admin of two orgs could likewise move memberships, invites and bindings
--   from one org to the other past every rule of the service.
-- What changes: lorestore_tenant_key_frozen(), a trigger function that refuses an UPDATE;
--   one BEFORE UPDATE OF <key> trigger per tenant table, firing only when the key changes:
--   owner on lessons, lesson_versions, lesson_sessions, tombstones, scope_policies and
--   foreign_records; principal on tokens and token_usage; org and member on memberships;
--   org, invitee and created_by on invites; org and created_by on scope_bindings.
--   (audit_log and recall_log grant no UPDATE at all; owner_stats keeps its own rules.)
-- Tenancy: no row moves between tenants any more, whoever asks (the table owner included);
--   a change of tenant is an export and an import, audited in both chains.
-- Compatibility: the service never updates a tenant key; `lorestore migrate` and imports
--   insert rows under their owner.
-- Verify: as lorestore_app with an org member as actor, `UPDATE lessons SET owner =
--   'user:<member>' WHERE owner = 'org:acme'` fails with "owner of lessons is immutable"
--   (SQLSTATE 42501); `UPDATE lessons SET value = ...` on the same rows still works.

CREATE FUNCTION lorestore_tenant_key_frozen() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp
    AS $$
BEGIN
    RAISE EXCEPTION '% of % is immutable: a row stays in its tenant', TG_ARGV[0], TG_TABLE_NAME
        USING ERRCODE = '42501',
              HINT = 'move lessons between owners by exporting and importing them';
END $$;

CREATE TRIGGER lessons_owner_frozen BEFORE UPDATE OF owner ON public.lessons
    FOR EACH ROW WHEN (OLD.owner IS DISTINCT FROM NEW.owner)
    EXECUTE FUNCTION lorestore_tenant_key_frozen('owner');
CREATE TRIGGER lesson_versions_owner_frozen BEFORE UPDATE OF owner ON public.lesson_versions
    FOR EACH ROW WHEN (OLD.owner IS DISTINCT FROM NEW.owner)
    EXECUTE FUNCTION lorestore_tenant_key_frozen('owner');
CREATE TRIGGER lesson_sessions_owner_frozen BEFORE UPDATE OF owner ON public.lesson_sessions
    FOR EACH ROW WHEN (OLD.owner IS DISTINCT FROM NEW.owner)
    EXECUTE FUNCTION lorestore_tenant_key_frozen('owner');
CREATE TRIGGER tombstones_owner_frozen BEFORE UPDATE OF owner ON public.tombstones
    FOR EACH ROW WHEN (OLD.owner IS DISTINCT FROM NEW.owner)
    EXECUTE FUNCTION lorestore_tenant_key_frozen('owner');
CREATE TRIGGER scope_policies_owner_frozen BEFORE UPDATE OF owner ON public.scope_policies
    FOR EACH ROW WHEN (OLD.owner IS DISTINCT FROM NEW.owner)
    EXECUTE FUNCTION lorestore_tenant_key_frozen('owner');
CREATE TRIGGER foreign_records_owner_frozen BEFORE UPDATE OF owner ON public.foreign_records
    FOR EACH ROW WHEN (OLD.owner IS DISTINCT FROM NEW.owner)
    EXECUTE FUNCTION lorestore_tenant_key_frozen('owner');
CREATE TRIGGER tokens_principal_frozen BEFORE UPDATE OF principal ON public.tokens
    FOR EACH ROW WHEN (OLD.principal IS DISTINCT FROM NEW.principal)
    EXECUTE FUNCTION lorestore_tenant_key_frozen('principal');
CREATE TRIGGER token_usage_principal_frozen BEFORE UPDATE OF principal ON public.token_usage
    FOR EACH ROW WHEN (OLD.principal IS DISTINCT FROM NEW.principal)
    EXECUTE FUNCTION lorestore_tenant_key_frozen('principal');
CREATE TRIGGER memberships_keys_frozen BEFORE UPDATE OF org, member ON public.memberships
    FOR EACH ROW WHEN ((OLD.org, OLD.member) IS DISTINCT FROM (NEW.org, NEW.member))
    EXECUTE FUNCTION lorestore_tenant_key_frozen('org or member');
CREATE TRIGGER invites_keys_frozen BEFORE UPDATE OF org, invitee, created_by ON public.invites
    FOR EACH ROW
    WHEN ((OLD.org, OLD.invitee, OLD.created_by) IS DISTINCT FROM
          (NEW.org, NEW.invitee, NEW.created_by))
    EXECUTE FUNCTION lorestore_tenant_key_frozen('org, invitee or created_by');
CREATE TRIGGER scope_bindings_keys_frozen BEFORE UPDATE OF org, created_by
    ON public.scope_bindings
    FOR EACH ROW WHEN ((OLD.org, OLD.created_by) IS DISTINCT FROM (NEW.org, NEW.created_by))
    EXECUTE FUNCTION lorestore_tenant_key_frozen('org or created_by');
