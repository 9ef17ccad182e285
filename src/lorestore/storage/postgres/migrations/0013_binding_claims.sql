-- 0013_binding_claims.sql
--
-- Why: any user could create an org and bind a pattern over scopes other people already
--   use (`repo::alice/*`, or any scope at all); from then on those people were refused their
--   own lessons there ("belongs to org:..., you are not a member"). A binding now may not
--   cover a scope where lessons of any owner but the org and the binding person are kept.
--   The app role cannot see other tenants' lessons (row-level security), so the check is
--   this function.
-- What changes: lorestore_scopes_held_by_others(org, likes) (SECURITY DEFINER, owned by
--   lorestore_definer): whether a lesson of an owner other than the org and the acting
--   user (from the session, never an argument) sits at a scope matching a LIKE pattern.
--   It answers yes or no only: no scope, owner or count leaves it.
-- Tenancy: reads every owner's lessons (the definer bypasses RLS) and returns one boolean;
--   EXECUTE is granted to lorestore_app only.
-- Compatibility: additive; org_bind of this release calls it.
-- Verify: as lorestore_app with actor user:bob, the function is true for
--   ('org:evil', '{repo::alice/%}') when user:alice holds a lesson in repo::alice/notes.

CREATE FUNCTION lorestore_scopes_held_by_others(org text, likes text[]) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
    AS $$
        SELECT EXISTS (SELECT 1 FROM lessons AS l
                       WHERE l.owner <> org AND l.owner <> lorestore_actor()
                         AND l.scope LIKE ANY (likes))
    $$;

ALTER FUNCTION lorestore_scopes_held_by_others(text, text[]) OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_scopes_held_by_others(text, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_scopes_held_by_others(text, text[]) TO lorestore_app;
