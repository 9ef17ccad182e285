-- 0030_count_scopes_and_audit_days.sql
--
-- Why: the dashboard's overview and its search under a prefix call memory_scopes, whose
--   per-scope counts read an index entry per lesson of every readable owner (an index-only
--   scan of migration 0029's lessons_inventory, still O(lessons)); the overview's chart
--   counted a month of audit events from their index. Both grow with the store.
-- What changes: two tables of counters kept by SECURITY DEFINER triggers in the transaction
--   of every change, and backfilled here from the rows. scope_tallies holds, per (owner,
--   scope), the lessons archived, and the active ones by trust (rejected included): each
--   lesson in exactly one column, so a scope's row goes when its last lesson does. Expiry
--   depends on the time, so it is not counted here: scope_counts subtracts the expired
--   lessons it finds through lessons_expiring (those not yet purged by the sweep).
--   audit_day_counts holds, per (owner, UTC day, action), the audit events appended; the
--   audit log is append-only, so only inserts count. The lessons trigger fires on INSERT,
--   DELETE and an UPDATE of owner, scope, status or trust, and does nothing when none of
--   them changed. And statistics on the expression source->>'author_association' (the
--   review queue's outside-author branch): without them the planner guessed nearly every
--   lesson had one and read the whole table instead of the partial index
--   lessons_outside_author of 0029, which holds none at 100k (140 ms -> 9 ms at 30k).
-- Tenancy: both tables have row-level security enabled and forced: lorestore_app may read the
--   rows of the owners it reads (as lessons_read) and write none; the trigger functions run
--   as lorestore_definer (BYPASSRLS), schema-qualified, search_path pg_catalog, public,
--   pg_temp, as the counters of migration 0025. The backfill lifts forced row-level security
--   for this transaction only (as 0025) and forces it again.
-- Compatibility: code of the previous release neither reads nor writes these tables; its
--   writes keep them current through the triggers. Each lesson insert, delete or state
--   change does one more upsert, each audit append one (on rows a writer of the same owner
--   already serializes on: owner_stats and the audit chain).
-- Verify: as lorestore_app, `INSERT INTO scope_tallies (owner, scope) VALUES ('user:x', 'x')`
--   fails with permission denied; with an actor bound, scope_counts returns what the
--   GROUP BY over lessons of 0029 returned; `SELECT sum(events) FROM audit_day_counts`
--   equals `SELECT count(*) FROM audit_log`.

CREATE TABLE public.scope_tallies (
    owner         text NOT NULL,
    scope         text NOT NULL,
    archived      integer NOT NULL DEFAULT 0 CHECK (archived >= 0),
    rejected      integer NOT NULL DEFAULT 0 CHECK (rejected >= 0),
    candidate     integer NOT NULL DEFAULT 0 CHECK (candidate >= 0),
    corroborated  integer NOT NULL DEFAULT 0 CHECK (corroborated >= 0),
    verified      integer NOT NULL DEFAULT 0 CHECK (verified >= 0),
    disputed      integer NOT NULL DEFAULT 0 CHECK (disputed >= 0),
    PRIMARY KEY (owner, scope)
);

CREATE TABLE public.audit_day_counts (
    owner   text NOT NULL,
    day     text NOT NULL,      -- YYYY-MM-DD, UTC
    action  text NOT NULL,
    events  integer NOT NULL CHECK (events >= 0),
    PRIMARY KEY (owner, day, action)
);

ALTER TABLE public.lessons NO FORCE ROW LEVEL SECURITY;
ALTER TABLE public.audit_log NO FORCE ROW LEVEL SECURITY;

INSERT INTO public.scope_tallies (owner, scope, archived, rejected, candidate, corroborated,
                                  verified, disputed)
SELECT owner, scope, count(*) FILTER (WHERE status = 'archived'),
       count(*) FILTER (WHERE status = 'active' AND trust = 'rejected'),
       count(*) FILTER (WHERE status = 'active' AND trust = 'candidate'),
       count(*) FILTER (WHERE status = 'active' AND trust = 'corroborated'),
       count(*) FILTER (WHERE status = 'active' AND trust = 'verified'),
       count(*) FILTER (WHERE status = 'active' AND trust = 'disputed')
FROM public.lessons GROUP BY owner, scope;

INSERT INTO public.audit_day_counts (owner, day, action, events)
SELECT owner, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), action, count(*)
FROM public.audit_log GROUP BY 1, 2, 3;

ALTER TABLE public.lessons FORCE ROW LEVEL SECURITY;
ALTER TABLE public.audit_log FORCE ROW LEVEL SECURITY;

ALTER TABLE public.scope_tallies ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.scope_tallies FORCE ROW LEVEL SECURITY;
ALTER TABLE public.audit_day_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.audit_day_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY scope_tallies_read ON public.scope_tallies FOR SELECT
    USING (owner = ANY ((SELECT public.lorestore_owners())::text[]));
CREATE POLICY audit_day_counts_read ON public.audit_day_counts FOR SELECT
    USING (owner = ANY ((SELECT public.lorestore_owners())::text[]));
GRANT SELECT ON public.scope_tallies, public.audit_day_counts TO lorestore_app;

-- Add a lesson's share (+1 or -1) to its scope's column; a row left at zero goes.
CREATE FUNCTION public.lorestore_tally_scope(who text, at_scope text, state text,
                                             level text, delta integer)
    RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
DECLARE
    a integer := CASE WHEN state = 'archived' THEN delta ELSE 0 END;
    r integer := CASE WHEN state = 'active' AND level = 'rejected' THEN delta ELSE 0 END;
    c integer := CASE WHEN state = 'active' AND level = 'candidate' THEN delta ELSE 0 END;
    o integer := CASE WHEN state = 'active' AND level = 'corroborated' THEN delta ELSE 0 END;
    v integer := CASE WHEN state = 'active' AND level = 'verified' THEN delta ELSE 0 END;
    d integer := CASE WHEN state = 'active' AND level = 'disputed' THEN delta ELSE 0 END;
    left_over integer;
BEGIN
    INSERT INTO public.scope_tallies AS t (owner, scope, archived, rejected, candidate,
                                           corroborated, verified, disputed)
    VALUES (who, at_scope, greatest(a, 0), greatest(r, 0), greatest(c, 0), greatest(o, 0),
            greatest(v, 0), greatest(d, 0))
    ON CONFLICT (owner, scope) DO UPDATE
        SET archived = t.archived + a, rejected = t.rejected + r,
            candidate = t.candidate + c, corroborated = t.corroborated + o,
            verified = t.verified + v, disputed = t.disputed + d
    RETURNING t.archived + t.rejected + t.candidate + t.corroborated + t.verified + t.disputed
        INTO left_over;
    IF left_over = 0 THEN
        DELETE FROM public.scope_tallies WHERE owner = who AND scope = at_scope;
    END IF;
END $$;

CREATE FUNCTION public.lorestore_tally_lesson() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.owner = NEW.owner AND OLD.scope = NEW.scope
       AND OLD.status = NEW.status AND OLD.trust = NEW.trust THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM public.lorestore_tally_scope(OLD.owner, OLD.scope, OLD.status, OLD.trust, -1);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        PERFORM public.lorestore_tally_scope(NEW.owner, NEW.scope, NEW.status, NEW.trust, 1);
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION public.lorestore_tally_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
BEGIN
    INSERT INTO public.audit_day_counts AS c (owner, day, action, events)
    VALUES (NEW.owner, pg_catalog.to_char(NEW.at AT TIME ZONE 'UTC', 'YYYY-MM-DD'),
            NEW.action, 1)
    ON CONFLICT (owner, day, action) DO UPDATE SET events = c.events + 1;
    RETURN NULL;
END $$;

CREATE TRIGGER lessons_tally AFTER INSERT OR DELETE OR UPDATE OF owner, scope, status, trust
    ON public.lessons FOR EACH ROW EXECUTE FUNCTION public.lorestore_tally_lesson();
CREATE TRIGGER audit_log_tally AFTER INSERT
    ON public.audit_log FOR EACH ROW EXECUTE FUNCTION public.lorestore_tally_audit();

GRANT SELECT, INSERT, UPDATE, DELETE ON public.scope_tallies TO lorestore_definer;
GRANT SELECT, INSERT, UPDATE ON public.audit_day_counts TO lorestore_definer;
ALTER FUNCTION public.lorestore_tally_scope(text, text, text, text, integer)
    OWNER TO lorestore_definer;
ALTER FUNCTION public.lorestore_tally_lesson() OWNER TO lorestore_definer;
ALTER FUNCTION public.lorestore_tally_audit() OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION public.lorestore_tally_scope(text, text, text, text, integer),
    public.lorestore_tally_lesson(), public.lorestore_tally_audit() FROM PUBLIC;

CREATE STATISTICS public.lessons_author_association ON ((source->>'author_association'))
    FROM public.lessons;
ANALYZE public.lessons;
