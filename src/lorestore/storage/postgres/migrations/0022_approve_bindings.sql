-- 0022_approve_bindings.sql
--
-- Why: first come, first served. Any user could create an org and bind `repo::victimco/*` or
--   `project::payments` before the real owners wrote there; their writes were then refused,
--   and if they accepted the squatter's invite to "fix" it, their lessons landed in the
--   squatter's org. And `org bind` was an oracle: it answered differently when others kept
--   lessons at the pattern, and lorestore_scopes_held_by_others took caller-chosen LIKE
--   patterns and an owner to leave out, so any org admin could probe other tenants' scopes.
-- What changes: scope_bindings gain approved_at and approved_by; only an approved binding
--   routes a scope (bindings stored before this migration are approved as they were). A
--   binding is approved when it is made if it lies within a binding the org already holds, or
--   if no user outside the org holds anything in the database (a lesson, a token or a
--   membership: a single-team server; user:local, the store's own person, is the
--   operator); any other waits for an operator (`lorestore db approve-binding`, run with a
--   superuser URL), who sees whether others keep lessons there.
--   lorestore_scopes_held_by_others(org, pattern) replaces the (org, likes) form: it derives
--   the LIKE patterns itself from a pattern that keeps the claim rule, leaves out only the
--   org and the acting user, and answers only an admin of the org, only while nobody outside
--   the org holds anything (otherwise the operator decides, and nothing is answered).
--   lorestore_check_binding (the trigger of migration check_binding_claims) also refuses an
--   approved INSERT by a role other than a superuser unless it is one of the two cases above
--   and (outside the org's own bindings) no other owner keeps lessons there. The app role
--   loses UPDATE on scope_bindings (the service never updates a binding).
-- Tenancy: narrows what the app role may do; the held-by-others answer reaches only the
--   members of an org that is the whole database.
-- Compatibility: `org bind` of this release answers `pending` where an operator must approve;
--   an older service's call to lorestore_scopes_held_by_others(text, text[]) fails.
-- Verify: as lorestore_app with actor user:eve (admin of org:evil) while user:alice holds a
--   token, `INSERT INTO scope_bindings (..., approved_at) VALUES ('org:evil', 'repo::x/*',
--   'user:eve', now(), now())` fails with "needs an operator's approval".

ALTER TABLE scope_bindings ADD COLUMN approved_at timestamptz, ADD COLUMN approved_by text;
UPDATE scope_bindings SET approved_at = created_at, approved_by = created_by;

-- Whether a user outside ``org`` holds anything here: a lesson, a token or a membership.
-- user:local, the store's own person (whom `serve` gives its first admin token), is the
-- operator, who approves bindings anyway: not an outsider.
CREATE FUNCTION lorestore_org_has_outsiders(org text) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
        SELECT EXISTS (
            SELECT 1 FROM public.principals AS p
            WHERE p.kind = 'user' AND p.id <> 'user:local'
              AND NOT EXISTS (SELECT 1 FROM public.memberships AS m
                              WHERE m.org = lorestore_org_has_outsiders.org AND m.member = p.id)
              AND (EXISTS (SELECT 1 FROM public.lessons AS l WHERE l.owner = p.id)
                   OR EXISTS (SELECT 1 FROM public.tokens AS t WHERE t.principal = p.id)
                   OR EXISTS (SELECT 1 FROM public.memberships AS o WHERE o.member = p.id)))
    $$;

-- Whether a lesson of an owner other than ``org`` and ``excluded`` sits at a scope a binding
-- of ``pattern`` claims (a repository pattern: its branches too). Internal: no EXECUTE grant.
CREATE FUNCTION lorestore_claims_held(org text, pattern text, excluded text) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
        WITH liked AS (
            SELECT replace(replace(replace(replace(lorestore_claims_held.pattern, '\', '\\'),
                           '%', '\%'), '_', '\_'), '*', '%') AS p,
                   lorestore_claims_held.pattern LIKE 'repo::%' AS repo
        )
        SELECT EXISTS (SELECT 1 FROM public.lessons AS l, liked
                       WHERE l.owner <> lorestore_claims_held.org
                         AND l.owner <> lorestore_claims_held.excluded
                         AND (l.scope LIKE liked.p
                              OR (liked.repo
                                  AND l.scope LIKE 'branch::' || substr(liked.p, 7) || '::%')))
    $$;

-- Whether a binding of ``pattern`` would lie within a binding ``org`` holds already: its text
-- matches that pattern (a ``*`` of its own inside theirs), or, a branch pattern, its repository.
CREATE FUNCTION lorestore_within_own(org text, pattern text) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
        WITH asked AS (
            SELECT lorestore_within_own.org AS org, lorestore_within_own.pattern AS pattern,
                   split_part(substr(lorestore_within_own.pattern, 9), '::', 1) AS repo
        )
        SELECT EXISTS (
            SELECT 1 FROM public.scope_bindings AS b, asked,
                 LATERAL (SELECT replace(replace(replace(replace(b.pattern, '\', '\\'), '%',
                                 '\%'), '_', '\_'), '*', '%') AS p) AS liked
            WHERE b.org = asked.org AND b.approved_at IS NOT NULL
              AND (asked.pattern LIKE liked.p
                   OR (asked.pattern LIKE 'branch::%' AND position('*' IN asked.repo) = 0
                       AND 'repo::' || asked.repo LIKE liked.p)))
    $$;

DROP FUNCTION lorestore_scopes_held_by_others(text, text[]);

CREATE FUNCTION lorestore_scopes_held_by_others(org text, pattern text) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
DECLARE
    kind text := split_part(pattern, '::', 1);
    first text := split_part(split_part(substr(pattern, length(kind) + 3), '/', 1), '::', 1);
BEGIN
    IF NOT org = ANY (public.lorestore_admin_orgs()) THEN
        RAISE EXCEPTION 'only an admin of % may ask', org USING ERRCODE = '42501';
    END IF;
    IF kind NOT IN ('project', 'repo', 'branch') OR first = '' OR position('*' IN first) > 0 THEN
        RAISE EXCEPTION '% names no owner or project', pattern USING ERRCODE = 'LS003';
    END IF;
    IF public.lorestore_org_has_outsiders(org) THEN
        RAISE EXCEPTION 'binding % needs an operator''s approval', pattern USING ERRCODE = 'LS004';
    END IF;
    RETURN public.lorestore_claims_held(org, pattern, public.lorestore_actor());
END $$;

CREATE OR REPLACE FUNCTION lorestore_check_binding() RETURNS trigger
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
DECLARE
    kind text := split_part(NEW.pattern, '::', 1);
    first text := split_part(split_part(substr(NEW.pattern, length(kind) + 3), '/', 1), '::', 1);
    other public.scope_bindings%ROWTYPE;
BEGIN
    IF kind NOT IN ('project', 'repo', 'branch') OR first = '' OR position('*' IN first) > 0
       OR NEW.pattern <> lower(NEW.pattern) THEN
        RAISE EXCEPTION '% names no owner or project: bound, it would take every matching scope',
            NEW.pattern USING ERRCODE = 'LS003';
    END IF;
    SELECT * INTO other FROM public.scope_bindings AS b
    WHERE b.org <> NEW.org AND public.lorestore_patterns_overlap(b.pattern, NEW.pattern)
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '% shares scopes with %, bound to %', NEW.pattern, other.pattern, other.org
            USING ERRCODE = 'LS002';
    END IF;
    -- An approval is an operator's (a superuser's session), except within the org's own
    -- bindings or in a database nobody outside the org uses.
    IF NEW.approved_at IS NOT NULL
       AND NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.rolname = session_user)
       AND NOT public.lorestore_within_own(NEW.org, NEW.pattern) THEN
        IF public.lorestore_org_has_outsiders(NEW.org) THEN
            RAISE EXCEPTION 'binding % needs an operator''s approval', NEW.pattern
                USING ERRCODE = 'LS004';
        END IF;
        IF public.lorestore_claims_held(NEW.org, NEW.pattern, NEW.created_by) THEN
            RAISE EXCEPTION 'lessons of other owners are kept at scopes % covers', NEW.pattern
                USING ERRCODE = 'LS002';
        END IF;
    END IF;
    RETURN NEW;
END $$;

GRANT SELECT ON principals, memberships, lessons, tokens TO lorestore_definer;
ALTER FUNCTION lorestore_org_has_outsiders(text) OWNER TO lorestore_definer;
ALTER FUNCTION lorestore_claims_held(text, text, text) OWNER TO lorestore_definer;
ALTER FUNCTION lorestore_within_own(text, text) OWNER TO lorestore_definer;
ALTER FUNCTION lorestore_scopes_held_by_others(text, text) OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_org_has_outsiders(text), lorestore_within_own(text, text),
    lorestore_claims_held(text, text, text), lorestore_scopes_held_by_others(text, text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_org_has_outsiders(text), lorestore_within_own(text, text),
    lorestore_scopes_held_by_others(text, text) TO lorestore_app;

REVOKE UPDATE ON scope_bindings FROM lorestore_app;
