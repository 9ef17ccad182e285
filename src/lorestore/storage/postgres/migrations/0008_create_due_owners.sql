-- 0008_create_due_owners.sql
--
-- Why: the maintenance sweeps must reach every tenant, not only the principal the server
--   runs as: expired lessons, archived ones past retention and old recall-log entries of
--   every user and org. Row-level security hides other tenants from any one actor, so the
--   sweeper first asks which owners have something due, then sweeps each one acting as
--   that owner (every erasure audited in that owner's own chain).
-- What changes: the definer function lorestore_due_owners(now, archived_cutoff,
--   recall_cutoff), returning owner ids only — never a lesson, a value or a count.
-- Tenancy: reveals which owners have lessons due for erasure, to the application role only;
--   it takes times, not identities, so it cannot be used to act for anyone.
-- Compatibility: additive.
-- Verify: as lorestore_app with no actor, `SELECT * FROM lorestore_due_owners(now(), now(),
--   now())` lists the owners with expired or archived lessons.

CREATE FUNCTION lorestore_due_owners(
    now timestamptz, archived_cutoff timestamptz, recall_cutoff timestamptz
) RETURNS SETOF text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
    AS $$
        SELECT owner FROM lessons WHERE expires_at IS NOT NULL AND expires_at <= now
        UNION
        SELECT owner FROM lessons WHERE status = 'archived' AND archived_at < archived_cutoff
        UNION
        SELECT owner FROM recall_log WHERE at < recall_cutoff
    $$;

GRANT SELECT ON lessons, recall_log TO lorestore_definer;
ALTER FUNCTION lorestore_due_owners(timestamptz, timestamptz, timestamptz)
    OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_due_owners(timestamptz, timestamptz, timestamptz)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_due_owners(timestamptz, timestamptz, timestamptz)
    TO lorestore_app;
