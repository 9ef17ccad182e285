-- 0036_recall_index_no_pending_list.sql
--
-- Why: a lesson's recent recalls (the dashboard's Lesson page, memory_recalls with a lesson
--   id) were read by a scan of every recall of the window, never through migration 0031's GIN
--   indexes, for two reasons. Under row-level security the containment test (`@>`, not
--   leakproof) may not run before the policy's test, so no index answers it for the app role;
--   and the indexes folded each recall's entries in later (fastupdate): until a vacuum did,
--   every search of them read the whole pending list, and the planner, costing that list,
--   chose the scan even where it could use them. At 100k lessons with 1,000 recalls logged
--   (their lists of a hundred lessons each, 4 MB), the lookup took 35-39 ms; through the
--   indexes, a tenth of a millisecond to find the recalls naming the lesson.
-- What changes:
--   - lorestore_recalls_naming(lesson, owners, since, max_rows): a definer function (as
--     lorestore_search_hits, 0009) that finds, through the indexes, the newest recalls of
--     the actor's owners naming the lesson; the rows are then read under RLS again by the
--     calling query (storage/postgres/queries.sql, recalls_of_lesson);
--   - both indexes take each recall's entries at once (fastupdate off), and the entries
--     waiting in their pending lists are folded in now. A recall's insert costs about 0.6 ms
--     more (200 recalls of the benchmark's corpus: 0.8 against 0.2 ms each).
-- Tenancy: the owners come from the session's actor (lorestore_owners()) as well as from the
--   argument, every name schema-qualified and pg_temp last; only ids leave the function.
-- Compatibility: additive, and storage parameters; every query of the previous release runs
--   as before.
-- Verify: as lorestore_app, a lesson's recalls are found with an index scan of recall_log
--   and no sequential scan (tests/storage/test_recalls_by_lesson.py); `SELECT reloptions FROM
--   pg_class WHERE relname = 'recall_log_held'` shows fastupdate=off.

CREATE FUNCTION lorestore_recalls_naming(
    lesson jsonb, owners text[], since timestamptz, max_rows integer
) RETURNS TABLE (recall_id uuid)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, public, pg_temp
    AS $$
DECLARE
    readable text[] := public.lorestore_owners();
BEGIN
    RETURN QUERY
        SELECT r.recall_id FROM public.recall_log AS r
        WHERE r.owner = ANY (readable) AND r.owner = ANY (owners) AND r.at >= since
          AND (r.offered @> lesson OR r.held @> lesson)
        ORDER BY r.at DESC, r.recall_id DESC
        LIMIT max_rows;
END $$;

ALTER FUNCTION lorestore_recalls_naming(jsonb, text[], timestamptz, integer)
    OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_recalls_naming(jsonb, text[], timestamptz, integer)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_recalls_naming(jsonb, text[], timestamptz, integer)
    TO lorestore_app;

ALTER INDEX public.recall_log_offered SET (fastupdate = off);
ALTER INDEX public.recall_log_held SET (fastupdate = off);
SELECT gin_clean_pending_list('public.recall_log_offered'::regclass);
SELECT gin_clean_pending_list('public.recall_log_held'::regclass);
