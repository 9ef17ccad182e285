-- 0039_rank_matches_by_bitmap.sql
--
-- Why: recall now ranks a task's frequent words among the newest lessons only, as search
--   does (storage/sql/lessons.py, _recall_matches). Given a window of row keys, the planner
--   estimated a handful of matches in it and walked the primary key over the whole window,
--   testing each row's search vector: at 100k lessons, a window of the newest 38k holding
--   1,884 matches took 66 ms where the full-text index ANDed with the window's row keys takes
--   21 ms. And the window's start was found by an OFFSET over the newest lessons
--   (lorestore_newest_key), 6-37 ms for the windows recall asks for.
-- What changes:
--   - lorestore_search_hits plans without plain index scans (enable_indexscan off, for its
--     own query only): the matches come from bitmaps, the full-text index's alone or ANDed
--     with the window's row-key range, never from a walk of the primary key;
--   - lorestore_word_shares also returns the row keys the sampled lessons span (oldest,
--     newest), from which the store estimates where a window starts;
--   - lorestore_newest_key is dropped (no caller is left).
-- Tenancy: as 0034 and 0035: the owners come from the session's actor (lorestore_owners()),
--   never from an argument; every name schema-qualified and pg_temp last.
-- Compatibility: the previous release's call of lorestore_word_shares reads (total, held) by
--   name, still there; it called lorestore_newest_key, dropped here, so it cannot run on this
--   schema (the previous release refuses a schema with migrations it does not know anyway).
-- Verify: as lorestore_app, lorestore_word_shares counts and spans only the actor's owners'
--   lessons (tests/storage/test_postgres_rls.py); EXPLAIN of the function's query with a
--   window shows a BitmapAnd (docs/search.md).

DROP FUNCTION lorestore_newest_key(integer);

ALTER FUNCTION lorestore_search_hits(tsquery, text[], text[], timestamptz, jsonb, integer,
    bigint, bigint) SET enable_indexscan = off;

DROP FUNCTION lorestore_word_shares(text[], integer);

CREATE FUNCTION lorestore_word_shares(words text[], sample integer)
RETURNS TABLE (total bigint, held bigint[], oldest bigint, newest bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, public, pg_temp
    SET plan_cache_mode = force_custom_plan
    AS $$
DECLARE
    readable text[] := public.lorestore_owners();
BEGIN
    RETURN QUERY
        -- strip(): each sampled vector read and decompressed once, without its positions,
        -- which a word's test does not need (a word parsed into a phrase, `a <-> b`, never
        -- matches a stripped vector: it is counted as held by none, and ranked as before);
        -- each word folded and parsed once.
        WITH newest AS MATERIALIZED (
            SELECT l.pk, strip(l.search) AS search FROM public.lessons AS l
            WHERE l.owner = ANY (readable)
            ORDER BY l.pk DESC
            LIMIT sample),
        queries AS MATERIALIZED (
            SELECT u.n, to_tsquery('english', public.lorestore_fold(u.w)) AS query
            FROM unnest(words) WITH ORDINALITY AS u (w, n))
        SELECT (SELECT count(*) FROM newest), ARRAY(
            SELECT (SELECT count(*) FROM newest WHERE newest.search @@ queries.query)
            FROM queries
            ORDER BY queries.n),
            (SELECT min(newest.pk) FROM newest), (SELECT max(newest.pk) FROM newest);
END $$;

ALTER FUNCTION lorestore_word_shares(text[], integer) OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_word_shares(text[], integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_word_shares(text[], integer) TO lorestore_app;
