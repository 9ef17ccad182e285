-- 0034_sample_common_words.sql
--
-- Why: deciding whether a search word is common (migration 0032) counted its matches up to
--   half the lessons the actor may read: at 100k lessons, 50,001 rows read for a word every
--   lesson holds, 30-70 ms, more than the ranking it saves. How common a word is shows as
--   well in the newest lessons as in all of them.
-- What changes: lorestore_word_shares(words, sample) replaces lorestore_word_shares(words,
--   floor): it reads the newest `sample` lessons of the owners the actor may read and counts
--   how many of them hold each word; `total` is how many it read (the whole store when it
--   holds fewer). storage/sql/lessons.py decides on these counts (docs/search.md). A custom
--   plan for each call: the planner then knows the owners, and walks the primary key
--   backwards for an owner holding most lessons, or an owner's index for one holding few.
-- Tenancy: as 0032: the owners come from the session's actor (lorestore_owners()), never from
--   an argument; every name schema-qualified and pg_temp last; only lessons the actor may
--   read are counted.
-- Compatibility: the previous release's search calls lorestore_word_shares(text[], integer)
--   by position with its floor (2,000), now read as the sample: its decisions are then made
--   on the newest 2,000 lessons.
-- Verify: as lorestore_app, lorestore_word_shares counts only the actor's owners' lessons
--   (tests/storage/test_search_common_words.py).

DROP FUNCTION lorestore_word_shares(text[], integer);

CREATE FUNCTION lorestore_word_shares(words text[], sample integer)
RETURNS TABLE (total bigint, held bigint[])
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
            SELECT strip(l.search) AS search FROM public.lessons AS l
            WHERE l.owner = ANY (readable)
            ORDER BY l.pk DESC
            LIMIT sample),
        queries AS MATERIALIZED (
            SELECT u.n, to_tsquery('english', public.lorestore_fold(u.w)) AS query
            FROM unnest(words) WITH ORDINALITY AS u (w, n))
        SELECT (SELECT count(*) FROM newest), ARRAY(
            SELECT (SELECT count(*) FROM newest WHERE newest.search @@ queries.query)
            FROM queries
            ORDER BY queries.n);
END $$;

ALTER FUNCTION lorestore_word_shares(text[], integer) OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_word_shares(text[], integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_word_shares(text[], integer) TO lorestore_app;
