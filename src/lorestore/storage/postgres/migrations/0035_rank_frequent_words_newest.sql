-- 0035_rank_frequent_words_newest.sql
--
-- Why: a search word held by a third to a half of the lessons is not common (migration 0034)
--   and was ranked over every match: at 100k lessons, `webhook` (46 % of the lessons) took
--   46k ts_rank_cd calls, p95 164.5 ms for the dashboard's search. Such a frequent word is
--   now ranked among the newest lessons only, as many as hold about 2,000 of its matches;
--   the older ones holding it and no rarer word of the search follow, newest first
--   (storage/sql/lessons.py, _word_classes; docs/search.md).
-- What changes:
--   - lorestore_search_hits takes a window of row keys, `since` (included) to `before`
--     (excluded), defaults every row; its plan becomes a custom one, so that a window the
--     planner sees walks the primary key (or ANDs it with the full-text index) instead of
--     ranking every match, and the owners are known (as lorestore_search_newest, 0032); its
--     scopes are tested on each match as text, not looked up pair by pair (below);
--   - lorestore_newest_key(nth): the row key of the nth lesson among the
--     newest the actor may read (1 the newest), where a window starts.
-- Tenancy: as 0024 and 0034: the owners come from the session's actor (lorestore_owners()),
--   never from an argument; every name schema-qualified and pg_temp last; the rows are read
--   under RLS again by the calling query.
-- Compatibility: the previous release calls lorestore_search_hits with six arguments, by
--   position: the window's defaults then cover every row, as before.
-- Verify: as lorestore_app, lorestore_newest_key counts only the actor's owners' lessons and
--   lorestore_search_hits keeps to its window (tests/storage/test_search_common_words.py,
--   tests/storage/test_postgres_rls.py).

DROP FUNCTION lorestore_search_hits(tsquery, text[], text[], timestamptz, jsonb, integer);

CREATE FUNCTION lorestore_search_hits(
    query tsquery, owners text[], scopes text[], at timestamptz, wanted_tags jsonb,
    max_hits integer, since bigint DEFAULT 0, before bigint DEFAULT 9223372036854775807
) RETURNS TABLE (pk bigint, score real)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, public, pg_temp
    SET plan_cache_mode = force_custom_plan
    AS $$
DECLARE
    readable text[] := public.lorestore_owners();
    -- The (owner, scope) pairs as one text each, tested on each match: given as pairs, a
    -- custom plan walked the listing index once for each pair and ANDed it with the
    -- full-text index (a word in 2.5 % of 100k lessons over five scopes: 21 ms, 14 ms so).
    addresses text[] := ARRAY(
        SELECT o || E'\x1f' || s FROM unnest(owners, scopes) AS u (o, s));
BEGIN
    RETURN QUERY
        SELECT l.pk, ts_rank_cd(l.search, query)
        FROM public.lessons AS l
        WHERE l.search @@ query
          AND l.pk >= since AND l.pk < before
          AND l.owner = ANY (readable)
          AND l.owner || E'\x1f' || l.scope = ANY (addresses)
          AND l.status = 'active' AND l.trust <> 'rejected'
          AND (l.expires_at IS NULL OR l.expires_at > at)
          AND l.tags @> wanted_tags
        ORDER BY 2 DESC, 1
        LIMIT max_hits;
END $$;

ALTER FUNCTION lorestore_search_hits(tsquery, text[], text[], timestamptz, jsonb, integer,
    bigint, bigint) OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_search_hits(tsquery, text[], text[], timestamptz, jsonb,
    integer, bigint, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_search_hits(tsquery, text[], text[], timestamptz, jsonb,
    integer, bigint, bigint) TO lorestore_app;

CREATE FUNCTION lorestore_newest_key(nth integer)
RETURNS bigint
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, public, pg_temp
    SET plan_cache_mode = force_custom_plan
    AS $$
DECLARE
    readable text[] := public.lorestore_owners();
BEGIN
    RETURN (SELECT l.pk FROM public.lessons AS l
            WHERE l.owner = ANY (readable)
            ORDER BY l.pk DESC
            OFFSET nth - 1 LIMIT 1);
END $$;

ALTER FUNCTION lorestore_newest_key(integer) OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_newest_key(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_newest_key(integer) TO lorestore_app;
