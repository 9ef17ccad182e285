-- 0031_index_recalls_by_lesson.sql
--
-- Why: a lesson's recent recalls (the dashboard's Lesson page, memory_recalls with a
--   lesson id) were found by reading every recall of the window and testing its offered and
--   held lists (jsonb of up to a hundred entries each) for the lesson: O(recalls in 30 days),
--   growing with every prompt an agent sends.
-- What changes: lesson_recalls, one row per (recall, lesson it offered or held), kept by a
--   SECURITY DEFINER trigger on recall_log (an insert adds the recall's lessons; a delete,
--   such as the retention sweep's, removes them) and backfilled here. The recall log is
--   append-only: its rows are never updated. A lesson's recalls are then a seek on (owner,
--   lesson_id) in time order.
-- Tenancy: row-level security enabled and forced: lorestore_app may read the rows of the
--   owners it reads (as recall_read on recall_log) and write none; the trigger function runs
--   as lorestore_definer (BYPASSRLS), schema-qualified, search_path pg_catalog, public,
--   pg_temp, as the counters of migration 0030. The backfill lifts forced row-level security
--   on recall_log for this transaction only and forces it again.
-- Compatibility: code of the previous release never reads it; its recalls keep it current
--   through the trigger, so moving back and forth is safe. Each recall adds one row per
--   lesson offered or held (about a hundred small rows, inside the recall's transaction).
-- Verify: as lorestore_app, `INSERT INTO lesson_recalls VALUES ('user:x', 'x', now(),
--   gen_random_uuid())` fails with permission denied; `SELECT count(*) FROM lesson_recalls`
--   equals the distinct (recall, lesson) pairs of recall_log's offered and held lists.

CREATE TABLE public.lesson_recalls (
    owner      text NOT NULL,
    lesson_id  text NOT NULL,
    at         timestamptz NOT NULL,
    recall_id  uuid NOT NULL,
    PRIMARY KEY (owner, lesson_id, at, recall_id)
);

ALTER TABLE public.recall_log NO FORCE ROW LEVEL SECURITY;

INSERT INTO public.lesson_recalls (owner, lesson_id, at, recall_id)
SELECT r.owner, e->>'lesson_id', r.at, r.recall_id
FROM public.recall_log AS r,
     jsonb_array_elements(r.offered || r.held) AS e
WHERE e->>'lesson_id' IS NOT NULL
ON CONFLICT DO NOTHING;

ALTER TABLE public.recall_log FORCE ROW LEVEL SECURITY;

ALTER TABLE public.lesson_recalls ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.lesson_recalls FORCE ROW LEVEL SECURITY;
CREATE POLICY lesson_recalls_read ON public.lesson_recalls FOR SELECT
    USING (owner = ANY ((SELECT public.lorestore_owners())::text[]));
GRANT SELECT ON public.lesson_recalls TO lorestore_app;

CREATE FUNCTION public.lorestore_index_recall() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO public.lesson_recalls (owner, lesson_id, at, recall_id)
        SELECT NEW.owner, e->>'lesson_id', NEW.at, NEW.recall_id
        FROM pg_catalog.jsonb_array_elements(NEW.offered || NEW.held) AS e
        WHERE e->>'lesson_id' IS NOT NULL
        ON CONFLICT DO NOTHING;
    ELSE
        DELETE FROM public.lesson_recalls
        WHERE owner = OLD.owner AND at = OLD.at AND recall_id = OLD.recall_id
          AND lesson_id IN (SELECT e->>'lesson_id'
                            FROM pg_catalog.jsonb_array_elements(OLD.offered || OLD.held) AS e);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER recall_log_index AFTER INSERT OR DELETE
    ON public.recall_log FOR EACH ROW EXECUTE FUNCTION public.lorestore_index_recall();

GRANT SELECT, INSERT, DELETE ON public.lesson_recalls TO lorestore_definer;
ALTER FUNCTION public.lorestore_index_recall() OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION public.lorestore_index_recall() FROM PUBLIC;
