-- 0009_create_search_functions.sql
--
-- Why: under row-level security PostgreSQL evaluates a query's non-leakproof conditions only
--   after the policy's, and the full-text match operator (@@) is not leakproof: so as the app
--   role a search could not use the GIN index and scanned every row of the owner (107 ms at
--   100k lessons against 4 ms for a superuser, benchmarks/postgres_rls.py). This function
--   finds the matching lessons with the index and returns only their keys and scores; the
--   caller then reads the rows through RLS as before.
-- What changes: lorestore_search_hits (SECURITY DEFINER, owned by lorestore_definer), used
--   by search and by recall's text candidates.
-- Tenancy: the function applies the tenancy check itself, from the session's actor:
--   `owner = ANY (lorestore_owners())` — never from an argument. The owners and scopes it
--   take only narrow that further, and the rows are then read under RLS again.
--   (Parameters are named unlike any column: in a SQL function a column wins a name clash.)
-- Compatibility: additive; the queries of this release call it.
-- Verify: as lorestore_app with actor user:bob, lorestore_search_hits over user:alice's
--   scopes returns nothing; EXPLAIN of the search shows a bitmap scan on lessons_search.

CREATE FUNCTION lorestore_search_hits(
    query tsquery, owners text[], scopes text[], at timestamptz, wanted_tags jsonb,
    max_hits integer
) RETURNS TABLE (pk bigint, score real)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
    AS $$
        SELECT l.pk, ts_rank_cd(l.search, query) AS score
        FROM lessons AS l
        WHERE l.search @@ query
          AND l.owner = ANY (lorestore_owners())
          AND (l.owner, l.scope) IN (SELECT * FROM unnest(owners, scopes))
          AND l.status = 'active' AND l.trust <> 'rejected'
          AND (l.expires_at IS NULL OR l.expires_at > at)
          AND l.tags @> wanted_tags
        ORDER BY score DESC, l.pk DESC
        LIMIT max_hits
    $$;

ALTER FUNCTION lorestore_search_hits(tsquery, text[], text[], timestamptz, jsonb, integer)
    OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_search_hits(tsquery, text[], text[], timestamptz, jsonb,
    integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_search_hits(tsquery, text[], text[], timestamptz, jsonb,
    integer) TO lorestore_app;
