-- 0033_count_per_statement.sql
--
-- Why: the counters of migrations 0025 (owner_stats: active lessons and stored bytes, with the
--   caps) and 0030 (scope_tallies, audit_day_counts) were kept by row-level triggers: every
--   inserted or deleted row ran its trigger function, which upserted its owner's counter row.
--   `lorestore migrate` and `lorestore import` insert thousands of rows of one owner in one
--   transaction, so each row updated the same counter rows again, and each update of a row
--   already updated in the transaction walks the versions of it the transaction made: 80k
--   lessons migrated at 211 lessons/s (379.6 s), 40k in 103.5 s.
-- What changes: inserts and deletes are counted once per statement. AFTER INSERT and AFTER
--   DELETE ... FOR EACH STATEMENT triggers see the statement's rows in a transition table
--   (REFERENCING NEW TABLE / OLD TABLE AS changed), aggregate them per counter key and add
--   each key's sum in one step: lorestore_count_owner once per owner (in owner order, so two
--   statements meet the counter rows in one order), one upsert of scope_tallies and of
--   audit_day_counts per statement. The triggers, per table:
--     lessons          lessons_count_added/_removed (lorestore_count_lessons),
--                      lessons_tally_added/_removed (lorestore_tally_lessons)
--     lesson_versions, foreign_records, tombstones, scope_policies
--                      <table>_count_added/_removed (lorestore_count_stored_rows)
--     audit_log        audit_log_tally_added (lorestore_tally_audits; the log is append-only)
--   An UPDATE (one row at a time in every path: a write, a review, an archive) keeps its
--   row-level trigger and function of 0025 and 0030, renamed <trigger>_changed and fired on
--   UPDATE OF the same columns only. lorestore_tally_audit (audit_log's row function) goes.
--   The counts and the caps are the same: a statement that takes an owner past its cap fails
--   with LS001 (active lessons) or LS005 (stored bytes) as before, the same message, and the
--   whole statement is undone; a statement under the cap passes. audit_heads keeps its
--   row-level trigger (0023): a head moves one key per event, which is what refuses a forked
--   chain on its primary key.
-- Tenancy: as 0025 and 0030: the new functions are SECURITY DEFINER, owned by
--   lorestore_definer, schema-qualified, search_path pg_catalog, public, pg_temp, and nobody
--   else may execute them; they read only the statement's own rows (the transition table,
--   which row-level security already admitted) and write only the counters of those rows'
--   owners. Row-level security stays forced on every table; no grant changes.
-- Compatibility: the schema of every table is unchanged; code of the previous release writes
--   as before and its writes are counted the same. An INSERT or DELETE that touches no row
--   runs the statement trigger over an empty transition table and changes nothing.
-- Verify: after a multi-row INSERT or DELETE, owner_stats, scope_tallies and audit_day_counts
--   equal a recount from the rows; an INSERT of 500 lessons runs lorestore_count_lessons once
--   (pg_stat_xact_user_functions, with track_functions = 'pl'); a batch crossing a cap fails
--   with LS001 or LS005 and leaves the counters as they were, one up to the cap lands
--   (tests/storage/test_statement_counting.py).

DROP TRIGGER lessons_count ON public.lessons;
DROP TRIGGER lessons_tally ON public.lessons;
DROP TRIGGER lesson_versions_count ON public.lesson_versions;
DROP TRIGGER foreign_records_count ON public.foreign_records;
DROP TRIGGER tombstones_count ON public.tombstones;
DROP TRIGGER scope_policies_count ON public.scope_policies;
DROP TRIGGER audit_log_tally ON public.audit_log;
DROP FUNCTION public.lorestore_tally_audit();

-- The lessons of one statement, added to (INSERT) or taken from (DELETE) their owners' active
-- lessons and stored bytes, one owner at a time; lorestore_count_owner refuses growth past a
-- cap.
CREATE FUNCTION public.lorestore_count_lessons() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
DECLARE
    sign integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
    share record;
BEGIN
    FOR share IN
        SELECT c.owner, count(*) FILTER (WHERE c.status = 'active')::integer AS active,
               sum(pg_catalog.octet_length(c.value)
                   + pg_catalog.octet_length(c.ext::text))::bigint AS bytes
        FROM changed AS c GROUP BY c.owner ORDER BY c.owner
    LOOP
        PERFORM public.lorestore_count_owner(share.owner, sign * share.active,
                                             sign * share.bytes);
    END LOOP;
    RETURN NULL;
END $$;

-- The stored bytes of one statement's versions, kept foreign records, tombstones or scope
-- policies (the same measure as lorestore_count_stored), per owner.
CREATE FUNCTION public.lorestore_count_stored_rows() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
DECLARE
    sign integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
    shares refcursor;
    who text;
    bytes bigint;
BEGIN
    -- One query per table: a row of another table has no such column.
    IF TG_TABLE_NAME = 'lesson_versions' THEN
        OPEN shares FOR
            SELECT c.owner, sum(pg_catalog.octet_length(c.value))::bigint
            FROM changed AS c GROUP BY c.owner ORDER BY c.owner;
    ELSIF TG_TABLE_NAME = 'foreign_records' THEN
        OPEN shares FOR
            SELECT c.owner, sum(pg_catalog.octet_length(c.record::text))::bigint
            FROM changed AS c GROUP BY c.owner ORDER BY c.owner;
    ELSE
        OPEN shares FOR
            SELECT c.owner, sum(pg_catalog.octet_length(c.ext::text))::bigint
            FROM changed AS c GROUP BY c.owner ORDER BY c.owner;
    END IF;
    LOOP
        FETCH shares INTO who, bytes;
        EXIT WHEN NOT FOUND;
        PERFORM public.lorestore_count_owner(who, 0, sign * bytes);
    END LOOP;
    CLOSE shares;
    RETURN NULL;
END $$;

-- One statement's lessons in their scopes' columns (as lorestore_tally_scope counts one): an
-- insert adds each (owner, scope)'s sums in one upsert; a delete subtracts them and removes
-- the rows left at zero.
CREATE FUNCTION public.lorestore_tally_lessons() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO public.scope_tallies AS t (owner, scope, archived, rejected, candidate,
                                               corroborated, verified, disputed)
        SELECT c.owner, c.scope,
               count(*) FILTER (WHERE c.status = 'archived'),
               count(*) FILTER (WHERE c.status = 'active' AND c.trust = 'rejected'),
               count(*) FILTER (WHERE c.status = 'active' AND c.trust = 'candidate'),
               count(*) FILTER (WHERE c.status = 'active' AND c.trust = 'corroborated'),
               count(*) FILTER (WHERE c.status = 'active' AND c.trust = 'verified'),
               count(*) FILTER (WHERE c.status = 'active' AND c.trust = 'disputed')
        FROM changed AS c GROUP BY c.owner, c.scope ORDER BY c.owner, c.scope
        ON CONFLICT (owner, scope) DO UPDATE
            SET archived = t.archived + excluded.archived,
                rejected = t.rejected + excluded.rejected,
                candidate = t.candidate + excluded.candidate,
                corroborated = t.corroborated + excluded.corroborated,
                verified = t.verified + excluded.verified,
                disputed = t.disputed + excluded.disputed;
        RETURN NULL;
    END IF;
    UPDATE public.scope_tallies AS t
    SET archived = t.archived - g.archived, rejected = t.rejected - g.rejected,
        candidate = t.candidate - g.candidate, corroborated = t.corroborated - g.corroborated,
        verified = t.verified - g.verified, disputed = t.disputed - g.disputed
    FROM (SELECT c.owner, c.scope,
                 count(*) FILTER (WHERE c.status = 'archived') AS archived,
                 count(*) FILTER (WHERE c.status = 'active' AND c.trust = 'rejected') AS rejected,
                 count(*) FILTER (WHERE c.status = 'active' AND c.trust = 'candidate')
                     AS candidate,
                 count(*) FILTER (WHERE c.status = 'active' AND c.trust = 'corroborated')
                     AS corroborated,
                 count(*) FILTER (WHERE c.status = 'active' AND c.trust = 'verified') AS verified,
                 count(*) FILTER (WHERE c.status = 'active' AND c.trust = 'disputed') AS disputed
          FROM changed AS c GROUP BY c.owner, c.scope) AS g
    WHERE t.owner = g.owner AND t.scope = g.scope;
    DELETE FROM public.scope_tallies AS t
    USING (SELECT DISTINCT c.owner, c.scope FROM changed AS c) AS g
    WHERE t.owner = g.owner AND t.scope = g.scope
      AND t.archived + t.rejected + t.candidate + t.corroborated + t.verified + t.disputed = 0;
    RETURN NULL;
END $$;

-- One statement's audit events per (owner, UTC day, action), in one upsert.
CREATE FUNCTION public.lorestore_tally_audits() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
BEGIN
    INSERT INTO public.audit_day_counts AS d (owner, day, action, events)
    SELECT c.owner, pg_catalog.to_char(c.at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), c.action, count(*)
    FROM changed AS c GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (owner, day, action) DO UPDATE SET events = d.events + excluded.events;
    RETURN NULL;
END $$;

ALTER FUNCTION public.lorestore_count_lessons() OWNER TO lorestore_definer;
ALTER FUNCTION public.lorestore_count_stored_rows() OWNER TO lorestore_definer;
ALTER FUNCTION public.lorestore_tally_lessons() OWNER TO lorestore_definer;
ALTER FUNCTION public.lorestore_tally_audits() OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION public.lorestore_count_lessons(), public.lorestore_count_stored_rows(),
    public.lorestore_tally_lessons(), public.lorestore_tally_audits() FROM PUBLIC;

-- A transition table needs a trigger of one event, hence an _added and a _removed trigger.
CREATE TRIGGER lessons_count_added AFTER INSERT ON public.lessons
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION public.lorestore_count_lessons();
CREATE TRIGGER lessons_count_removed AFTER DELETE ON public.lessons
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION public.lorestore_count_lessons();
CREATE TRIGGER lessons_count_changed AFTER UPDATE OF owner, status, value, ext
    ON public.lessons FOR EACH ROW EXECUTE FUNCTION public.lorestore_count_lesson();

CREATE TRIGGER lessons_tally_added AFTER INSERT ON public.lessons
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION public.lorestore_tally_lessons();
CREATE TRIGGER lessons_tally_removed AFTER DELETE ON public.lessons
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION public.lorestore_tally_lessons();
CREATE TRIGGER lessons_tally_changed AFTER UPDATE OF owner, scope, status, trust
    ON public.lessons FOR EACH ROW EXECUTE FUNCTION public.lorestore_tally_lesson();

CREATE TRIGGER lesson_versions_count_added AFTER INSERT ON public.lesson_versions
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION public.lorestore_count_stored_rows();
CREATE TRIGGER lesson_versions_count_removed AFTER DELETE ON public.lesson_versions
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION public.lorestore_count_stored_rows();
CREATE TRIGGER lesson_versions_count_changed AFTER UPDATE OF owner, value
    ON public.lesson_versions FOR EACH ROW EXECUTE FUNCTION public.lorestore_count_stored();

CREATE TRIGGER foreign_records_count_added AFTER INSERT ON public.foreign_records
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION public.lorestore_count_stored_rows();
CREATE TRIGGER foreign_records_count_removed AFTER DELETE ON public.foreign_records
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION public.lorestore_count_stored_rows();
CREATE TRIGGER foreign_records_count_changed AFTER UPDATE OF owner, record
    ON public.foreign_records FOR EACH ROW EXECUTE FUNCTION public.lorestore_count_stored();

CREATE TRIGGER tombstones_count_added AFTER INSERT ON public.tombstones
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION public.lorestore_count_stored_rows();
CREATE TRIGGER tombstones_count_removed AFTER DELETE ON public.tombstones
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION public.lorestore_count_stored_rows();
CREATE TRIGGER tombstones_count_changed AFTER UPDATE OF owner, ext
    ON public.tombstones FOR EACH ROW EXECUTE FUNCTION public.lorestore_count_stored();

CREATE TRIGGER scope_policies_count_added AFTER INSERT ON public.scope_policies
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION public.lorestore_count_stored_rows();
CREATE TRIGGER scope_policies_count_removed AFTER DELETE ON public.scope_policies
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION public.lorestore_count_stored_rows();
CREATE TRIGGER scope_policies_count_changed AFTER UPDATE OF owner, ext
    ON public.scope_policies FOR EACH ROW EXECUTE FUNCTION public.lorestore_count_stored();

CREATE TRIGGER audit_log_tally_added AFTER INSERT ON public.audit_log
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION public.lorestore_tally_audits();
