-- 0003_create_orgs.sql
--
-- Why: teams. An organisation owns lessons its members share; members hold owner, admin,
--   member or viewer. A person joins by accepting an invite addressed to them with a
--   one-time code. A scope binding routes a scope (or a pattern such as repo::acme/*) to an
--   org, so that lessons written there belong to the team rather than to whoever wrote them.
-- What changes: creates invites and scope_bindings; adds the definer functions
--   lorestore_create_org (the caller becomes its owner) and lorestore_accept_invite (the
--   caller joins if the invite names the caller and the code matches).
-- Tenancy: invites are visible to the org's admins and to the invitee; bindings are routing
--   metadata, readable by any authenticated actor (so a non-member gets a clear refusal
--   instead of silently writing a personal lesson into team territory) and writable only
--   by the org's owners and admins. Both definer functions take the actor from the session
--   setting, never from an argument: the code is a credential, not an identity.
-- Compatibility: additive.
-- Verify: as lorestore_app with actor user:bob, `SELECT lorestore_accept_invite('<hash>')`
--   for an invite addressed to user:alice returns NULL and adds no membership.

CREATE TABLE invites (
    id            uuid PRIMARY KEY,
    org           text NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    invitee       text NOT NULL CHECK (invitee LIKE 'user:%'),
    role          text NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    code_hash     text NOT NULL UNIQUE,
    created_by    text NOT NULL,
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    accepted_at   timestamptz
);

CREATE TABLE scope_bindings (
    org           text NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    pattern       text NOT NULL,
    created_by    text NOT NULL,
    created_at    timestamptz NOT NULL,
    PRIMARY KEY (org, pattern)
);

CREATE UNIQUE INDEX scope_bindings_pattern ON scope_bindings (pattern);

ALTER TABLE invites ENABLE ROW LEVEL SECURITY;
ALTER TABLE invites FORCE ROW LEVEL SECURITY;
ALTER TABLE scope_bindings ENABLE ROW LEVEL SECURITY;
ALTER TABLE scope_bindings FORCE ROW LEVEL SECURITY;

CREATE POLICY invites_admin ON invites FOR ALL
    USING (org = ANY ((SELECT lorestore_admin_orgs())::text[]))
    WITH CHECK (org = ANY ((SELECT lorestore_admin_orgs())::text[])
                AND created_by = lorestore_actor());
CREATE POLICY invites_invitee ON invites FOR SELECT
    USING (invitee = lorestore_actor());

CREATE POLICY bindings_read ON scope_bindings FOR SELECT
    USING (lorestore_actor() IS NOT NULL);
CREATE POLICY bindings_admin ON scope_bindings FOR ALL
    USING (org = ANY ((SELECT lorestore_admin_orgs())::text[]))
    WITH CHECK (org = ANY ((SELECT lorestore_admin_orgs())::text[])
                AND created_by = lorestore_actor());

GRANT SELECT, INSERT, UPDATE, DELETE ON invites, scope_bindings TO lorestore_app;

-- Create an org owned by the caller. Returns false when the slug is taken.
CREATE FUNCTION lorestore_create_org(slug text, display_name text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public
    AS $$
DECLARE
    me text := lorestore_actor();
    org_id text := 'org:' || slug;
BEGIN
    IF me IS NULL OR me NOT LIKE 'user:%' THEN
        RAISE EXCEPTION 'only a signed-in user can create an org' USING ERRCODE = '42501';
    END IF;
    INSERT INTO principals (id, kind, name) VALUES (org_id, 'org', display_name)
    ON CONFLICT (id) DO NOTHING;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO memberships (org, member, role) VALUES (org_id, me, 'owner');
    RETURN true;
END $$;

-- Accept an invite addressed to the caller. Returns the org joined, or NULL.
CREATE FUNCTION lorestore_accept_invite(presented_hash text, at timestamptz) RETURNS text
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public
    AS $$
DECLARE
    me text := lorestore_actor();
    inv invites%ROWTYPE;
BEGIN
    SELECT * INTO inv FROM invites
    WHERE code_hash = presented_hash AND invitee = me AND accepted_at IS NULL AND expires_at > at
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    INSERT INTO memberships (org, member, role) VALUES (inv.org, me, inv.role)
    ON CONFLICT (org, member) DO UPDATE SET role = excluded.role;
    UPDATE invites SET accepted_at = at WHERE id = inv.id;
    RETURN inv.org;
END $$;

GRANT INSERT ON memberships TO lorestore_definer;
GRANT UPDATE (role) ON memberships TO lorestore_definer;
GRANT SELECT, UPDATE (accepted_at) ON invites TO lorestore_definer;
ALTER FUNCTION lorestore_create_org(text, text) OWNER TO lorestore_definer;
ALTER FUNCTION lorestore_accept_invite(text, timestamptz) OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_create_org(text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION lorestore_accept_invite(text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_create_org(text, text) TO lorestore_app;
GRANT EXECUTE ON FUNCTION lorestore_accept_invite(text, timestamptz) TO lorestore_app;
