-- 0020_invite_lifecycle.sql
--
-- Why: an invite outlived its creator's standing: an admin removed from an org (or demoted)
--   kept every code it had handed out, and nobody could take a code back. And
--   lorestore_accept_invite(code, at) compared the expiry with a time its caller passed: as
--   the app role, `SELECT lorestore_accept_invite(hash, '2000-01-01')` took an expired invite.
-- What changes: invites gain revoked_at and revoked_by (NULL when the invite was voided
--   because its creator lost the right to issue it). lorestore_accept_invite(code) replaces
--   the two-argument function: it reads the database's clock (now()) and refuses a revoked
--   invite. A trigger on memberships (lorestore_void_invites, definer) voids the pending
--   invites of a member who leaves or is removed, or is demoted below admin (and its owner
--   invites when it stops being an owner). invites_admin becomes one policy per command: an
--   admin reads and deletes the org's invites, inserts them as itself (an owner invite only
--   as an owner), and revokes them as itself (an owner invite only as an owner); the app
--   role may update revoked_at and revoked_by only.
-- Tenancy: narrows what the app role may do; nothing becomes visible that was not.
-- Compatibility: the service of this release calls lorestore_accept_invite(code) and
--   inserts invites with the database's clock; an older service's two-argument call fails.
-- Verify: as lorestore_app, `SELECT lorestore_accept_invite(hash, now())` is an undefined
--   function; after `lorestore org remove acme bob`, bob's pending invites show revoked_at.

ALTER TABLE invites ADD COLUMN revoked_at timestamptz, ADD COLUMN revoked_by text;

DROP FUNCTION lorestore_accept_invite(text, timestamptz);

CREATE FUNCTION lorestore_accept_invite(presented_hash text) RETURNS text
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
DECLARE
    me text := public.lorestore_actor();
    inv public.invites%ROWTYPE;
BEGIN
    SELECT * INTO inv FROM public.invites
    WHERE code_hash = presented_hash AND invitee = me AND accepted_at IS NULL
      AND revoked_at IS NULL AND expires_at > now()
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    INSERT INTO public.memberships (org, member, role) VALUES (inv.org, me, inv.role)
    ON CONFLICT (org, member) DO UPDATE SET role = excluded.role;
    UPDATE public.invites SET accepted_at = now() WHERE id = inv.id;
    RETURN inv.org;
END $$;

ALTER FUNCTION lorestore_accept_invite(text) OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_accept_invite(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_accept_invite(text) TO lorestore_app;

-- An invite speaks for its creator's role: when that role ends, so do its pending invites.
CREATE FUNCTION lorestore_void_invites() RETURNS trigger
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
BEGIN
    IF TG_OP = 'DELETE' OR NEW.role NOT IN ('owner', 'admin') THEN
        UPDATE public.invites SET revoked_at = now()
        WHERE org = OLD.org AND created_by = OLD.member
          AND accepted_at IS NULL AND revoked_at IS NULL;
    ELSIF OLD.role = 'owner' AND NEW.role <> 'owner' THEN
        UPDATE public.invites SET revoked_at = now()
        WHERE org = OLD.org AND created_by = OLD.member AND role = 'owner'
          AND accepted_at IS NULL AND revoked_at IS NULL;
    END IF;
    RETURN NULL;
END $$;

GRANT UPDATE (revoked_at) ON invites TO lorestore_definer;
ALTER FUNCTION lorestore_void_invites() OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_void_invites() FROM PUBLIC;

CREATE TRIGGER memberships_void_invites
    AFTER DELETE OR UPDATE OF role ON public.memberships
    FOR EACH ROW WHEN (OLD.role IN ('owner', 'admin'))
    EXECUTE FUNCTION lorestore_void_invites();

DROP POLICY invites_admin ON invites;
CREATE POLICY invites_admin_read ON invites FOR SELECT
    USING (org = ANY ((SELECT lorestore_admin_orgs())::text[]));
CREATE POLICY invites_admin_delete ON invites FOR DELETE
    USING (org = ANY ((SELECT lorestore_admin_orgs())::text[]));
CREATE POLICY invites_admin_insert ON invites FOR INSERT
    WITH CHECK (org = ANY ((SELECT lorestore_admin_orgs())::text[])
                AND created_by = lorestore_actor()
                AND revoked_at IS NULL AND accepted_at IS NULL
                AND (role <> 'owner' OR org = ANY ((SELECT lorestore_owned_orgs())::text[])));
CREATE POLICY invites_admin_revoke ON invites FOR UPDATE
    USING (org = ANY ((SELECT lorestore_admin_orgs())::text[])
           AND (role <> 'owner' OR org = ANY ((SELECT lorestore_owned_orgs())::text[])))
    WITH CHECK (org = ANY ((SELECT lorestore_admin_orgs())::text[])
                AND revoked_by = lorestore_actor());

REVOKE UPDATE ON invites FROM lorestore_app;
GRANT UPDATE (revoked_at, revoked_by) ON invites TO lorestore_app;
