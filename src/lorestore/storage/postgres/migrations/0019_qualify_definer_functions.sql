-- 0019_qualify_definer_functions.sql
--
-- Why: every SECURITY DEFINER function had `SET search_path = public`, and PostgreSQL still
--   searches the session's temporary schema first when the path does not name it: an app
--   role session could `CREATE TEMP TABLE memberships (...)` holding a row that makes it a
--   member of every org, and lorestore_owners() (running as lorestore_definer, which bypasses
--   row-level security) read that table and admitted every tenant; a temporary `invites`
--   table made lorestore_accept_invite() insert a real owner membership from a forged invite.
-- What changes: each definer function is replaced with every table, type and function it
--   names qualified by its schema (public.memberships, public.lorestore_actor(), ...), and
--   with `SET search_path = pg_catalog, public, pg_temp`: the temporary schema is searched
--   last, so even an unqualified name added later cannot be shadowed. Signatures, owners
--   and grants are unchanged (CREATE OR REPLACE keeps them). `lorestore db init` also
--   revokes TEMPORARY on the database from PUBLIC, so the app role cannot create temporary
--   tables at all (a database privilege, which a migration run as lorestore_owner may not
--   change).
-- Tenancy: closes a way around every policy; nothing becomes visible that was not.
-- Compatibility: the same functions with the same results; the application creates no
--   temporary tables on PostgreSQL.
-- Verify: `SELECT proname, proconfig FROM pg_proc WHERE prosecdef` shows
--   {search_path=pg_catalog, public, pg_temp} for each; as lorestore_app with TEMPORARY
--   granted back, a temporary memberships table does not change `SELECT lorestore_owners()`.

CREATE OR REPLACE FUNCTION lorestore_owners() RETURNS text[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
DECLARE
    me text := public.lorestore_actor();
BEGIN
    IF me IS NULL THEN
        RETURN ARRAY[]::text[];
    END IF;
    RETURN array_append(
        coalesce((SELECT array_agg(m.org) FROM public.memberships AS m WHERE m.member = me),
                 ARRAY[]::text[]),
        me);
END $$;

CREATE OR REPLACE FUNCTION lorestore_writable_owners() RETURNS text[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
DECLARE
    me text := public.lorestore_actor();
BEGIN
    IF me IS NULL THEN
        RETURN ARRAY[]::text[];
    END IF;
    RETURN array_append(
        coalesce((SELECT array_agg(m.org) FROM public.memberships AS m
                  WHERE m.member = me AND m.role IN ('owner', 'admin', 'member')),
                 ARRAY[]::text[]),
        me);
END $$;

CREATE OR REPLACE FUNCTION lorestore_admin_orgs() RETURNS text[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
BEGIN
    RETURN coalesce((SELECT array_agg(m.org) FROM public.memberships AS m
                     WHERE m.member = public.lorestore_actor() AND m.role IN ('owner', 'admin')),
                    ARRAY[]::text[]);
END $$;

CREATE OR REPLACE FUNCTION lorestore_owned_orgs() RETURNS text[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
BEGIN
    RETURN coalesce((SELECT array_agg(m.org) FROM public.memberships AS m
                     WHERE m.member = public.lorestore_actor() AND m.role = 'owner'),
                    ARRAY[]::text[]);
END $$;

CREATE OR REPLACE FUNCTION lorestore_register_actor() RETURNS void
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
        INSERT INTO public.principals (id, kind, name)
        SELECT public.lorestore_actor(), 'user', split_part(public.lorestore_actor(), ':', 2)
        WHERE public.lorestore_actor() LIKE 'user:%'
        ON CONFLICT (id) DO NOTHING
    $$;

CREATE OR REPLACE FUNCTION lorestore_token_by_hash(presented_hash text)
    RETURNS SETOF public.tokens
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$ SELECT * FROM public.tokens WHERE token_hash = presented_hash $$;

CREATE OR REPLACE FUNCTION lorestore_create_org(slug text, display_name text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
DECLARE
    me text := public.lorestore_actor();
    org_id text := 'org:' || slug;
BEGIN
    IF me IS NULL OR me NOT LIKE 'user:%' THEN
        RAISE EXCEPTION 'only a signed-in user can create an org' USING ERRCODE = '42501';
    END IF;
    INSERT INTO public.principals (id, kind, name) VALUES (org_id, 'org', display_name)
    ON CONFLICT (id) DO NOTHING;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO public.memberships (org, member, role) VALUES (org_id, me, 'owner');
    RETURN true;
END $$;

CREATE OR REPLACE FUNCTION lorestore_accept_invite(presented_hash text, at timestamptz)
    RETURNS text
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
DECLARE
    me text := public.lorestore_actor();
    inv public.invites%ROWTYPE;
BEGIN
    SELECT * INTO inv FROM public.invites
    WHERE code_hash = presented_hash AND invitee = me AND accepted_at IS NULL AND expires_at > at
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    INSERT INTO public.memberships (org, member, role) VALUES (inv.org, me, inv.role)
    ON CONFLICT (org, member) DO UPDATE SET role = excluded.role;
    UPDATE public.invites SET accepted_at = at WHERE id = inv.id;
    RETURN inv.org;
END $$;

CREATE OR REPLACE FUNCTION lorestore_due_owners(
    now timestamptz, archived_cutoff timestamptz, recall_cutoff timestamptz
) RETURNS SETOF text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
        SELECT owner FROM public.lessons WHERE expires_at IS NOT NULL AND expires_at <= now
        UNION
        SELECT owner FROM public.lessons WHERE status = 'archived' AND archived_at < archived_cutoff
        UNION
        SELECT owner FROM public.recall_log WHERE at < recall_cutoff
    $$;

CREATE OR REPLACE FUNCTION lorestore_search_hits(
    query tsquery, owners text[], scopes text[], at timestamptz, wanted_tags jsonb,
    max_hits integer
) RETURNS TABLE (pk bigint, score real)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
        SELECT l.pk, ts_rank_cd(l.search, query) AS score
        FROM public.lessons AS l
        WHERE l.search @@ query
          AND l.owner = ANY (public.lorestore_owners())
          AND (l.owner, l.scope) IN (SELECT * FROM unnest(owners, scopes))
          AND l.status = 'active' AND l.trust <> 'rejected'
          AND (l.expires_at IS NULL OR l.expires_at > at)
          AND l.tags @> wanted_tags
        ORDER BY score DESC, l.pk
        LIMIT max_hits
    $$;

CREATE OR REPLACE FUNCTION lorestore_scopes_held_by_others(org text, likes text[])
    RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
        SELECT EXISTS (SELECT 1 FROM public.lessons AS l
                       WHERE l.owner <> org AND l.owner <> public.lorestore_actor()
                         AND l.scope LIKE ANY (likes))
    $$;
