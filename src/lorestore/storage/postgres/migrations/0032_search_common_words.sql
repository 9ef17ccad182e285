-- 0032_search_common_words.sql
--
-- Why: a search for a word most lessons hold ranked every lesson holding it before it cut
--   the page: at 100k lessons, 97k ts_rank_cd calls, p95 372-618 ms for the dashboard's
--   search under a prefix (benchmarks/dashboard_bench.py). Such a word tells the lessons
--   apart by nothing; the store now ranks a search's other words and lists the lessons
--   holding only common words after them, newest first (storage/sql/lessons.py,
--   _common_words; docs/search.md).
-- What changes: two definer functions beside lorestore_search_hits, with its filters:
--   - lorestore_word_shares(words, floor): the lessons of the owners the actor may read, and
--     how many of them hold each word, each counted only past floor and half the lessons;
--   - lorestore_search_newest(...): lorestore_search_hits' arguments and result, the newest
--     matches first and unranked (a custom plan: for a common word the planner walks the
--     primary key backwards and stops at the page, where a generic plan would read every
--     match through the full-text index).
-- Tenancy: as 0024: the owners come from the session's actor (lorestore_owners()), never
--   from an argument, every name schema-qualified and pg_temp last; the rows are read under
--   RLS again by the calling query. The counts cover only lessons the actor may read.
-- Compatibility: additive; the previous release's queries never call the new functions.
-- Verify: as lorestore_app, lorestore_word_shares counts only the actor's owners' lessons
--   (tests/storage/test_search_common_words.py).

CREATE FUNCTION lorestore_word_shares(words text[], floor integer)
RETURNS TABLE (total bigint, held bigint[])
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, public, pg_temp
    AS $$
DECLARE
    readable text[] := public.lorestore_owners();
    lessons bigint;
BEGIN
    SELECT coalesce(sum(t.candidate + t.corroborated + t.verified + t.disputed + t.archived
                        + t.rejected), 0)
    INTO lessons
    FROM public.scope_tallies AS t WHERE t.owner = ANY (readable);
    RETURN QUERY SELECT lessons, ARRAY(
        SELECT (SELECT count(*) FROM (
                    SELECT 1 FROM public.lessons AS l
                    WHERE l.search @@ to_tsquery('english', public.lorestore_fold(u.w))
                      AND l.owner = ANY (readable)
                    LIMIT greatest(floor + 1, (lessons + 1) / 2)) AS c)
        FROM unnest(words) WITH ORDINALITY AS u (w, n)
        ORDER BY u.n);
END $$;

ALTER FUNCTION lorestore_word_shares(text[], integer) OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_word_shares(text[], integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_word_shares(text[], integer) TO lorestore_app;

CREATE FUNCTION lorestore_search_newest(
    query tsquery, owners text[], scopes text[], at timestamptz, wanted_tags jsonb,
    max_hits integer
) RETURNS TABLE (pk bigint, score real)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, public, pg_temp
    SET plan_cache_mode = force_custom_plan
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
        ORDER BY l.pk DESC
        LIMIT max_hits;
END $$;

ALTER FUNCTION lorestore_search_newest(tsquery, text[], text[], timestamptz, jsonb, integer)
    OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_search_newest(tsquery, text[], text[], timestamptz, jsonb,
    integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_search_newest(tsquery, text[], text[], timestamptz, jsonb,
    integer) TO lorestore_app;
