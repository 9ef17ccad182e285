-- 0024_plan_search_hits.sql
--
-- Why: a search's tail at 100k lessons was 3-5x the same query written directly (p95
--   99-170 ms against 30 ms, benchmarks/postgres_rls.py). lorestore_search_hits, a SQL
--   function, is planned with its arguments unknown, and its tenancy check
--   `owner = ANY (lorestore_owners())` was a per-row filter: the membership reader (a
--   PL/pgSQL definer function) ran once for every lesson the words matched, 17,882 times
--   for a two-word query.
-- What changes: lorestore_search_hits becomes PL/pgSQL: it reads the actor's owners once,
--   into a variable, and filters on that array. The same query, arguments and result;
--   the plan is the generic one on purpose (plan_cache_mode = force_generic_plan): the
--   full-text index's bitmap, then the owner, scope and state filters. Custom plans
--   (dynamic SQL) were slower: planning on every call, and for a common word a bitmap AND
--   with the listing index repeated for each (owner, scope) pair.
-- Tenancy: unchanged; every name schema-qualified and pg_temp searched last, as in
--   0019_qualify_definer_functions.sql. The function still applies `owner = ANY (lorestore_owners())` from
--   the session's actor, never from an argument; the rows are read under RLS again.
-- Compatibility: same signature, owner, grants and result order; the queries of the
--   previous release call it unchanged.
-- Verify: as lorestore_app with track_functions = 'all', one search over many matches
--   calls lorestore_owners() at most twice (pg_stat_xact_user_functions).

CREATE OR REPLACE FUNCTION lorestore_search_hits(
    query tsquery, owners text[], scopes text[], at timestamptz, wanted_tags jsonb,
    max_hits integer
) RETURNS TABLE (pk bigint, score real)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, public, pg_temp
    SET plan_cache_mode = force_generic_plan
    AS $$
DECLARE
    readable text[] := public.lorestore_owners();
BEGIN
    RETURN QUERY
        SELECT l.pk, ts_rank_cd(l.search, query)
        FROM public.lessons AS l
        WHERE l.search @@ query
          AND l.owner = ANY (readable)
          AND (l.owner, l.scope) IN (SELECT * FROM unnest(owners, scopes))
          AND l.status = 'active' AND l.trust <> 'rejected'
          AND (l.expires_at IS NULL OR l.expires_at > at)
          AND l.tags @> wanted_tags
        ORDER BY 2 DESC, 1
        LIMIT max_hits;
END $$;
