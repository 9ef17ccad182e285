-- 0037_count_recall_days.sql
--
-- Why: the dashboard's overview charts recalls and the lessons they held per day
--   (memory_activity). It counted them from the recall log: every recall of the last 30 days
--   read, and the length of its held list (a hundred and more entries) summed. That grows
--   with every prompt an agent sends: at 100k lessons the overview went from 33-47 ms to
--   69 ms as the kept benchmark database logged 200 recalls a run.
-- What changes: recall_day_counts, per (owner, UTC day): the recalls logged and the lessons
--   they held, kept as audit_day_counts is (migrations 0030 and 0033): AFTER INSERT and
--   AFTER DELETE ... FOR EACH STATEMENT triggers aggregate the statement's rows (its
--   transition table) per owner and day and add or subtract each sum in one upsert; a day's
--   row goes when its last recall does (the retention sweep, an owner's purge), so the
--   counters always equal a recount of the log. The log is never updated (no UPDATE grant).
--   Backfilled here from the log.
-- Tenancy: as audit_day_counts (0030): row-level security enabled and forced; lorestore_app
--   reads the rows of the owners it reads and writes none; the trigger function runs as
--   lorestore_definer (BYPASSRLS), schema-qualified, search_path pg_catalog, public,
--   pg_temp, executable by nobody else, and writes only the counters of the rows the
--   statement itself inserted or deleted (which row-level security already admitted). The
--   backfill lifts forced row-level security on recall_log for this transaction only.
-- Compatibility: code of the previous release neither reads nor writes the table; its
--   recalls and sweeps keep it current through the triggers. Each recall's insert does one
--   more upsert, on a row other recalls of the same owner and day lock until they commit.
-- Verify: `SELECT sum(recalls), sum(held) FROM recall_day_counts` equals `SELECT count(*),
--   sum(jsonb_array_length(held)) FROM recall_log`; as lorestore_app, `UPDATE
--   recall_day_counts SET recalls = 0` fails with permission denied
--   (tests/storage/test_scope_tallies.py).

CREATE TABLE public.recall_day_counts (
    owner    text NOT NULL,
    day      text NOT NULL,      -- YYYY-MM-DD, UTC
    recalls  integer NOT NULL CHECK (recalls >= 0),
    held     bigint NOT NULL CHECK (held >= 0),
    PRIMARY KEY (owner, day)
);

ALTER TABLE public.recall_log NO FORCE ROW LEVEL SECURITY;
INSERT INTO public.recall_day_counts (owner, day, recalls, held)
SELECT owner, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), count(*),
       sum(jsonb_array_length(held))
FROM public.recall_log GROUP BY 1, 2;
ALTER TABLE public.recall_log FORCE ROW LEVEL SECURITY;

ALTER TABLE public.recall_day_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.recall_day_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY recall_day_counts_read ON public.recall_day_counts FOR SELECT
    USING (owner = ANY ((SELECT public.lorestore_owners())::text[]));
GRANT SELECT ON public.recall_day_counts TO lorestore_app;

-- One statement's recalls per (owner, UTC day): an insert adds each day's sums in one upsert;
-- a delete subtracts them (an UPDATE: an upsert's proposed row would be checked, and fail,
-- before its conflict) and removes the days left without a recall.
CREATE FUNCTION public.lorestore_tally_recalls() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO public.recall_day_counts AS d (owner, day, recalls, held)
        SELECT c.owner, pg_catalog.to_char(c.at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), count(*),
               sum(pg_catalog.jsonb_array_length(c.held))
        FROM changed AS c GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (owner, day) DO UPDATE
            SET recalls = d.recalls + excluded.recalls, held = d.held + excluded.held;
        RETURN NULL;
    END IF;
    UPDATE public.recall_day_counts AS d
    SET recalls = d.recalls - g.recalls, held = d.held - g.held
    FROM (SELECT c.owner, pg_catalog.to_char(c.at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
                 count(*) AS recalls, sum(pg_catalog.jsonb_array_length(c.held)) AS held
          FROM changed AS c GROUP BY 1, 2) AS g
    WHERE d.owner = g.owner AND d.day = g.day;
    DELETE FROM public.recall_day_counts AS d
    USING (SELECT DISTINCT c.owner,
                  pg_catalog.to_char(c.at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day
           FROM changed AS c) AS g
    WHERE d.owner = g.owner AND d.day = g.day AND d.recalls = 0;
    RETURN NULL;
END $$;

ALTER FUNCTION public.lorestore_tally_recalls() OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION public.lorestore_tally_recalls() FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.recall_day_counts TO lorestore_definer;

-- A transition table needs a trigger of one event, hence an _added and a _removed trigger.
CREATE TRIGGER recall_log_tally_added AFTER INSERT ON public.recall_log
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION public.lorestore_tally_recalls();
CREATE TRIGGER recall_log_tally_removed AFTER DELETE ON public.recall_log
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION public.lorestore_tally_recalls();
