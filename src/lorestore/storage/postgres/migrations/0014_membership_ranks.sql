-- 0014_membership_ranks.sql
--
-- Why: the service lets only an owner invite, promote or remove an owner, and lets any
--   member leave; the database enforced neither. As lorestore_app an org admin could
--   promote itself to owner, add an owner without an invite, invite an owner or remove one,
--   while a plain member could not leave (its DELETE matched no row, and the service said
--   "not a member"). And a viewer could log recall decisions under an org it cannot write.
-- What changes: lorestore_owned_orgs() (definer, like lorestore_admin_orgs: the orgs the
--   actor owns). memberships_admin (FOR ALL) becomes one policy per command: an admin's
--   INSERT, UPDATE and DELETE may not make, change or remove an owner's row unless the actor
--   owns the org; DELETE also lets a member remove its own row. invites_admin refuses an
--   owner invite from a non-owner. recall_write takes the writable owners.
-- Tenancy: narrows what the app role may do; nothing becomes visible that was not.
-- Compatibility: the service of this release checks the same ranks first, so its calls
--   are unchanged; a member's own `org remove` now works on PostgreSQL as on SQLite.
-- Verify: as lorestore_app with actor user:bob (admin of org:acme, not owner),
--   `UPDATE memberships SET role = 'owner' WHERE member = 'user:bob'` fails the policy
--   check and `DELETE FROM memberships WHERE role = 'owner'` deletes 0 rows.

CREATE FUNCTION lorestore_owned_orgs() RETURNS text[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public
    AS $$
BEGIN
    RETURN coalesce((SELECT array_agg(m.org) FROM memberships AS m
                     WHERE m.member = lorestore_actor() AND m.role = 'owner'),
                    ARRAY[]::text[]);
END $$;
ALTER FUNCTION lorestore_owned_orgs() OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_owned_orgs() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_owned_orgs() TO lorestore_app;

DROP POLICY memberships_admin ON memberships;

CREATE POLICY memberships_insert ON memberships FOR INSERT
    WITH CHECK (org = ANY ((SELECT lorestore_admin_orgs())::text[])
                AND (role <> 'owner' OR org = ANY ((SELECT lorestore_owned_orgs())::text[])));
CREATE POLICY memberships_update ON memberships FOR UPDATE
    USING (org = ANY ((SELECT lorestore_admin_orgs())::text[])
           AND (role <> 'owner' OR org = ANY ((SELECT lorestore_owned_orgs())::text[])))
    WITH CHECK (org = ANY ((SELECT lorestore_admin_orgs())::text[])
                AND (role <> 'owner' OR org = ANY ((SELECT lorestore_owned_orgs())::text[])));
CREATE POLICY memberships_delete ON memberships FOR DELETE
    USING (member = lorestore_actor()
           OR (org = ANY ((SELECT lorestore_admin_orgs())::text[])
               AND (role <> 'owner' OR org = ANY ((SELECT lorestore_owned_orgs())::text[]))));

ALTER POLICY invites_admin ON invites
    USING (org = ANY ((SELECT lorestore_admin_orgs())::text[]))
    WITH CHECK (org = ANY ((SELECT lorestore_admin_orgs())::text[])
                AND created_by = lorestore_actor()
                AND (role <> 'owner' OR org = ANY ((SELECT lorestore_owned_orgs())::text[])));

ALTER POLICY recall_write ON recall_log
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[])
                AND actor = lorestore_actor());
