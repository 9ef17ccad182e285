-- 0001_create_lesson_store.sql
--
-- Why: the team backend. The database itself holds the tenancy boundary, so that a bug in
--   lorestore's Python cannot show one tenant's lessons to another: every tenant table has
--   row-level security ENABLED and FORCED, the application connects as `lorestore_app`,
--   which owns nothing and has NOBYPASSRLS, and every policy derives the actor from the
--   transaction setting `lorestore.actor` and the membership table, never from an argument.
--   The same seven mechanisms as the embedded store (versions, tombstones, trust,
--   bi-temporal validity, scope, audit, review) have their columns from the start.
-- What changes: creates principals, memberships, lessons (+ generated tsvector, GIN),
--   lesson_versions, lesson_sessions, tombstones, audit_log (append-only, hash-chained per
--   owner), recall_log, scope_policies, owner_stats (O(1) caps), the actor functions and
--   the policies.
-- Tenancy: a row's `owner` is 'user:<id>' or 'org:<slug>'. Readable owners: the actor and
--   the orgs it is a member of (any role). Writable owners: the actor and the orgs where it
--   is owner, admin or member (a viewer reads only). Policies check the one owner column on
--   USING and WITH CHECK alike, so no write can land in another tenant.
--   `lorestore_owners()` and `lorestore_writable_owners()` are SECURITY DEFINER (owned by
--   `lorestore_definer`, which may bypass RLS to read memberships without recursing into
--   their policy); they take no arguments and read the actor from the session setting.
-- Compatibility: first migration of the PostgreSQL backend.
-- Verify: as lorestore_app, `SELECT count(*) FROM lessons` without setting lorestore.actor
--   returns 0; `UPDATE audit_log SET action = 'x'` fails with permission denied;
--   `SELECT relname FROM pg_class WHERE relrowsecurity AND relforcerowsecurity` lists every
--   tenant table.

-- The acting principal of this transaction, set by the application with
-- set_config('lorestore.actor', ..., true). Unset means nobody: every policy then fails.
CREATE FUNCTION lorestore_actor() RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT nullif(current_setting('lorestore.actor', true), '') $$;

CREATE TABLE principals (
    id          text PRIMARY KEY CHECK (id ~ '^(user|org):[a-z0-9][a-z0-9._-]{0,62}$'),
    kind        text NOT NULL CHECK (kind IN ('user', 'org')),
    name        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (split_part(id, ':', 1) = kind)
);

CREATE TABLE memberships (
    org         text NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    member      text NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    role        text NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org, member),
    CHECK (org LIKE 'org:%' AND member LIKE 'user:%')
);

CREATE INDEX memberships_member ON memberships (member);

-- Owners whose rows the actor may read: itself and every org it belongs to. PL/pgSQL, not
-- SQL, so that the plan of the membership query is cached for the session: a policy calls
-- these once per statement (as an InitPlan), and a SECURITY DEFINER SQL function would be
-- re-planned on every call.
CREATE FUNCTION lorestore_owners() RETURNS text[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public
    AS $$
DECLARE
    me text := lorestore_actor();
BEGIN
    IF me IS NULL THEN
        RETURN ARRAY[]::text[];
    END IF;
    RETURN array_append(
        coalesce((SELECT array_agg(m.org) FROM memberships AS m WHERE m.member = me),
                 ARRAY[]::text[]),
        me);
END $$;

-- Owners the actor may write to: itself and the orgs where it is owner, admin or member.
CREATE FUNCTION lorestore_writable_owners() RETURNS text[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public
    AS $$
DECLARE
    me text := lorestore_actor();
BEGIN
    IF me IS NULL THEN
        RETURN ARRAY[]::text[];
    END IF;
    RETURN array_append(
        coalesce((SELECT array_agg(m.org) FROM memberships AS m
                  WHERE m.member = me AND m.role IN ('owner', 'admin', 'member')),
                 ARRAY[]::text[]),
        me);
END $$;

-- Orgs where the actor administers membership (owner or admin).
CREATE FUNCTION lorestore_admin_orgs() RETURNS text[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public
    AS $$
BEGIN
    RETURN coalesce((SELECT array_agg(m.org) FROM memberships AS m
                     WHERE m.member = lorestore_actor() AND m.role IN ('owner', 'admin')),
                    ARRAY[]::text[]);
END $$;

CREATE TABLE lessons (
    pk              bigint GENERATED ALWAYS AS IDENTITY,
    owner           text NOT NULL REFERENCES principals (id),
    id              uuid NOT NULL UNIQUE,
    scope           text NOT NULL,
    key             text NOT NULL,
    value           text NOT NULL,
    value_digest    text NOT NULL,
    tags            jsonb NOT NULL DEFAULT '[]',
    kind            text NOT NULL DEFAULT 'lesson' CHECK (kind IN ('lesson', 'signal', 'bus')),
    trust           text NOT NULL DEFAULT 'candidate'
                    CHECK (trust IN ('candidate', 'corroborated', 'verified', 'disputed', 'rejected')),
    status          text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
    version         integer NOT NULL CHECK (version >= 1),
    seen_count      integer NOT NULL DEFAULT 1 CHECK (seen_count >= 0),
    valid_from      timestamptz,
    valid_to        timestamptz,
    recorded_at     timestamptz NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    archived_at     timestamptz,
    expires_at      timestamptz,
    source          jsonb NOT NULL DEFAULT '{}',
    depends_on      jsonb NOT NULL DEFAULT '[]',
    review          jsonb,
    ext             jsonb NOT NULL DEFAULT '{}',
    pending_version integer,
    search          tsvector GENERATED ALWAYS AS (
                        setweight(to_tsvector('english', key), 'A')
                        || setweight(to_tsvector('english', coalesce(tags::text, '')), 'B')
                        || setweight(to_tsvector('english', value), 'C')) STORED,
    PRIMARY KEY (pk),
    CHECK (valid_to IS NULL OR valid_from IS NULL OR valid_from <= valid_to)
);

-- The address is unique per owner and stays taken while archived.
CREATE UNIQUE INDEX lessons_address ON lessons (owner, scope, key);
-- Newest-first listing of a scope's served lessons (keyset on updated_at, pk).
CREATE INDEX lessons_listing ON lessons (owner, scope, updated_at DESC, pk DESC)
    WHERE status = 'active' AND trust <> 'rejected';
CREATE INDEX lessons_search ON lessons USING gin (search);
-- The two purge sweeps read different predicates; each gets its own partial index.
CREATE INDEX lessons_expiring ON lessons (owner, expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX lessons_archived ON lessons (owner, archived_at) WHERE status = 'archived';
CREATE INDEX lessons_digest ON lessons (owner, value_digest);
CREATE INDEX lessons_review ON lessons (owner, trust, updated_at)
    WHERE trust IN ('disputed', 'corroborated') OR pending_version IS NOT NULL;

CREATE TABLE lesson_versions (
    owner         text NOT NULL,
    lesson_pk     bigint NOT NULL REFERENCES lessons (pk) ON DELETE CASCADE,
    version       integer NOT NULL,
    state         text NOT NULL DEFAULT 'accepted'
                  CHECK (state IN ('accepted', 'proposed', 'superseded', 'rejected')),
    value         text NOT NULL,
    value_digest  text NOT NULL,
    tags          jsonb NOT NULL DEFAULT '[]',
    valid_from    timestamptz,
    valid_to      timestamptz,
    recorded_at   timestamptz NOT NULL,
    accepted_at   timestamptz,
    actor         text NOT NULL,
    source        jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (lesson_pk, version)
);

-- A version's content is immutable; only its review state (and acceptance time) moves.
CREATE FUNCTION lesson_versions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.owner, NEW.lesson_pk, NEW.version, NEW.value, NEW.value_digest, NEW.tags,
        NEW.valid_from, NEW.valid_to, NEW.recorded_at, NEW.actor, NEW.source)
       IS DISTINCT FROM
       (OLD.owner, OLD.lesson_pk, OLD.version, OLD.value, OLD.value_digest, OLD.tags,
        OLD.valid_from, OLD.valid_to, OLD.recorded_at, OLD.actor, OLD.source) THEN
        RAISE EXCEPTION 'lesson_versions are immutable';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER lesson_versions_immutable BEFORE UPDATE ON lesson_versions
    FOR EACH ROW EXECUTE FUNCTION lesson_versions_immutable();

CREATE TABLE lesson_sessions (
    owner         text NOT NULL,
    lesson_pk     bigint NOT NULL REFERENCES lessons (pk) ON DELETE CASCADE,
    value_digest  text NOT NULL,
    session       text NOT NULL,
    first_seen    timestamptz NOT NULL,
    PRIMARY KEY (lesson_pk, value_digest, session)
);

CREATE TABLE tombstones (
    id            uuid PRIMARY KEY,
    owner         text NOT NULL REFERENCES principals (id),
    scope         text NOT NULL,
    value_digest  text NOT NULL,
    reason        text NOT NULL,
    actor         text NOT NULL,
    created_at    timestamptz NOT NULL,
    lesson_id     uuid,
    lifted_at     timestamptz,
    lifted_by     text,
    lift_reason   text
);

CREATE INDEX tombstones_lookup ON tombstones (owner, value_digest, scope) WHERE lifted_at IS NULL;

CREATE TABLE audit_log (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner           text NOT NULL,
    at              timestamptz NOT NULL,
    actor           text NOT NULL,
    action          text NOT NULL,
    scope           text,
    key             text,
    lesson_id       uuid,
    before_version  integer,
    after_version   integer,
    before_digest   text,
    after_digest    text,
    reason          text,
    detail          jsonb NOT NULL DEFAULT '{}',
    prev_hash       text NOT NULL,
    hash            text NOT NULL
);

CREATE INDEX audit_log_owner ON audit_log (owner, id);
CREATE INDEX audit_log_address ON audit_log (owner, scope, key, id);

-- Belt and braces: the app role has no UPDATE or DELETE grant on audit_log, and even the
-- owner cannot rewrite it.
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only';
END $$;

CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

CREATE TABLE recall_log (
    recall_id     uuid PRIMARY KEY,
    owner         text NOT NULL,
    at            timestamptz NOT NULL,
    actor         text NOT NULL,
    context       jsonb NOT NULL,
    offered       jsonb NOT NULL,
    held          jsonb NOT NULL
);

CREATE INDEX recall_log_age ON recall_log (owner, at);

CREATE TABLE scope_policies (
    owner           text NOT NULL REFERENCES principals (id),
    scope           text NOT NULL,
    revision_policy text NOT NULL DEFAULT 'none' CHECK (revision_policy IN ('none', 'commit', 'files')),
    require_review  boolean NOT NULL DEFAULT false,
    updated_at      timestamptz NOT NULL,
    updated_by      text NOT NULL,
    PRIMARY KEY (owner, scope)
);

-- Per-owner count of active lessons, kept by a trigger, so the cap costs one row update per
-- write whether the owner has 100 lessons or 100,000 (no count(*) on the write path).
CREATE TABLE owner_stats (
    owner           text PRIMARY KEY REFERENCES principals (id),
    active_lessons  integer NOT NULL DEFAULT 0,
    max_active      integer NOT NULL DEFAULT 10000 CHECK (max_active >= 0)
);

CREATE FUNCTION lessons_count_active() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    delta integer := 0;
    who text;
    now_active integer;
    cap integer;
BEGIN
    IF TG_OP = 'INSERT' THEN
        who := NEW.owner; delta := (NEW.status = 'active')::int;
    ELSIF TG_OP = 'DELETE' THEN
        who := OLD.owner; delta := -(OLD.status = 'active')::int;
    ELSE
        who := NEW.owner; delta := (NEW.status = 'active')::int - (OLD.status = 'active')::int;
    END IF;
    IF delta = 0 THEN
        RETURN NULL;
    END IF;
    INSERT INTO owner_stats AS s (owner, active_lessons) VALUES (who, greatest(delta, 0))
    ON CONFLICT (owner) DO UPDATE SET active_lessons = s.active_lessons + delta
    RETURNING s.active_lessons, s.max_active INTO now_active, cap;
    IF delta > 0 AND now_active > cap THEN
        RAISE EXCEPTION 'cap_exceeded: % has reached its limit of % active lessons', who, cap
            USING ERRCODE = 'LS001';
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER lessons_count_active AFTER INSERT OR DELETE OR UPDATE OF status ON lessons
    FOR EACH ROW EXECUTE FUNCTION lessons_count_active();

-- A principal is created by a definer function that reads the actor from the session:
-- registering yourself grants nothing but an empty tenant of your own.
CREATE FUNCTION lorestore_register_actor() RETURNS void
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public
    AS $$
        INSERT INTO principals (id, kind, name)
        SELECT lorestore_actor(), 'user', split_part(lorestore_actor(), ':', 2)
        WHERE lorestore_actor() LIKE 'user:%'
        ON CONFLICT (id) DO NOTHING
    $$;

-- Row-level security: enabled and forced on every tenant table.
ALTER TABLE principals ENABLE ROW LEVEL SECURITY;
ALTER TABLE principals FORCE ROW LEVEL SECURITY;
ALTER TABLE memberships ENABLE ROW LEVEL SECURITY;
ALTER TABLE memberships FORCE ROW LEVEL SECURITY;
ALTER TABLE lessons ENABLE ROW LEVEL SECURITY;
ALTER TABLE lessons FORCE ROW LEVEL SECURITY;
ALTER TABLE lesson_versions ENABLE ROW LEVEL SECURITY;
ALTER TABLE lesson_versions FORCE ROW LEVEL SECURITY;
ALTER TABLE lesson_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE lesson_sessions FORCE ROW LEVEL SECURITY;
ALTER TABLE tombstones ENABLE ROW LEVEL SECURITY;
ALTER TABLE tombstones FORCE ROW LEVEL SECURITY;
ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_log FORCE ROW LEVEL SECURITY;
ALTER TABLE recall_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE recall_log FORCE ROW LEVEL SECURITY;
ALTER TABLE scope_policies ENABLE ROW LEVEL SECURITY;
ALTER TABLE scope_policies FORCE ROW LEVEL SECURITY;
ALTER TABLE owner_stats ENABLE ROW LEVEL SECURITY;
ALTER TABLE owner_stats FORCE ROW LEVEL SECURITY;

-- Principals: you see yourself and the orgs you belong to; creating principals is
-- administration done by the owner role (lorestore db / org commands via definer functions).
CREATE POLICY principals_read ON principals FOR SELECT
    USING (id = ANY ((SELECT lorestore_owners())::text[]));

CREATE POLICY memberships_read ON memberships FOR SELECT
    USING (org = ANY ((SELECT lorestore_owners())::text[]));
CREATE POLICY memberships_admin ON memberships FOR ALL
    USING (org = ANY ((SELECT lorestore_admin_orgs())::text[]))
    WITH CHECK (org = ANY ((SELECT lorestore_admin_orgs())::text[]));

-- Tenant content: read what you may read, write only where you may write.
CREATE POLICY lessons_read ON lessons FOR SELECT
    USING (owner = ANY ((SELECT lorestore_owners())::text[]));
CREATE POLICY lessons_insert ON lessons FOR INSERT
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[]));
CREATE POLICY lessons_update ON lessons FOR UPDATE
    USING (owner = ANY ((SELECT lorestore_writable_owners())::text[]))
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[]));
CREATE POLICY lessons_delete ON lessons FOR DELETE
    USING (owner = ANY ((SELECT lorestore_writable_owners())::text[]));

CREATE POLICY versions_read ON lesson_versions FOR SELECT
    USING (owner = ANY ((SELECT lorestore_owners())::text[]));
CREATE POLICY versions_write ON lesson_versions FOR INSERT
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[]));
CREATE POLICY versions_update ON lesson_versions FOR UPDATE
    USING (owner = ANY ((SELECT lorestore_writable_owners())::text[]))
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[]));
CREATE POLICY versions_delete ON lesson_versions FOR DELETE
    USING (owner = ANY ((SELECT lorestore_writable_owners())::text[]));

CREATE POLICY sessions_all ON lesson_sessions FOR ALL
    USING (owner = ANY ((SELECT lorestore_writable_owners())::text[]))
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[]));

CREATE POLICY tombstones_read ON tombstones FOR SELECT
    USING (owner = ANY ((SELECT lorestore_owners())::text[]));
CREATE POLICY tombstones_write ON tombstones FOR INSERT
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[]));
CREATE POLICY tombstones_lift ON tombstones FOR UPDATE
    USING (owner = ANY ((SELECT lorestore_writable_owners())::text[]))
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[]));

-- The audit log: read and append, nothing else (no UPDATE or DELETE policy, nor grant).
CREATE POLICY audit_read ON audit_log FOR SELECT
    USING (owner = ANY ((SELECT lorestore_owners())::text[]));
CREATE POLICY audit_append ON audit_log FOR INSERT
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[]) AND actor = lorestore_actor());

CREATE POLICY recall_read ON recall_log FOR SELECT
    USING (owner = ANY ((SELECT lorestore_owners())::text[]));
CREATE POLICY recall_write ON recall_log FOR INSERT
    WITH CHECK (owner = ANY ((SELECT lorestore_owners())::text[]) AND actor = lorestore_actor());
CREATE POLICY recall_expire ON recall_log FOR DELETE
    USING (owner = ANY ((SELECT lorestore_writable_owners())::text[]));

CREATE POLICY policies_read ON scope_policies FOR SELECT
    USING (owner = ANY ((SELECT lorestore_owners())::text[]));
CREATE POLICY policies_write ON scope_policies FOR ALL
    USING (owner = ANY ((SELECT lorestore_writable_owners())::text[]))
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[]));

CREATE POLICY stats_all ON owner_stats FOR ALL
    USING (owner = ANY ((SELECT lorestore_writable_owners())::text[]))
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[]));

-- Grants: the app role owns nothing and gets exactly what the policies above govern.
GRANT SELECT ON principals, memberships TO lorestore_app;
GRANT INSERT, UPDATE, DELETE ON memberships TO lorestore_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON lessons, lesson_versions, lesson_sessions,
    scope_policies TO lorestore_app;
GRANT SELECT, INSERT, UPDATE ON tombstones, owner_stats TO lorestore_app;
GRANT SELECT, INSERT ON audit_log TO lorestore_app;
GRANT SELECT, INSERT, DELETE ON recall_log TO lorestore_app;
GRANT EXECUTE ON FUNCTION lorestore_actor(), lorestore_owners(), lorestore_writable_owners(),
    lorestore_admin_orgs() TO lorestore_app;

-- The membership readers run as lorestore_definer (BYPASSRLS, owns nothing else) so that
-- reading memberships inside a policy does not recurse into the memberships policy.
GRANT SELECT ON memberships TO lorestore_definer;
GRANT SELECT, INSERT ON principals TO lorestore_definer;
ALTER FUNCTION lorestore_register_actor() OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_register_actor() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_register_actor() TO lorestore_app;
ALTER FUNCTION lorestore_owners() OWNER TO lorestore_definer;
ALTER FUNCTION lorestore_writable_owners() OWNER TO lorestore_definer;
ALTER FUNCTION lorestore_admin_orgs() OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_owners(), lorestore_writable_owners(),
    lorestore_admin_orgs() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_owners(), lorestore_writable_owners(),
    lorestore_admin_orgs() TO lorestore_app;
