-- 0023_create_audit_heads.sql
--
-- Why: each owner's audit events form a hash chain, which shows an edited, removed or
--   reordered event, but not the newest events deleted: what is left of a chain cut at its
--   end still links from the first event to its new last one. A head (how many events the
--   chain holds, the last one's hash) that only an append can move makes the cut visible:
--   `lorestore audit verify` compares each chain with its head.
-- What changes: the table audit_heads (owner, events, last_hash), filled from the chains
--   already stored; lorestore_advance_audit_head(), a SECURITY DEFINER trigger function owned
--   by lorestore_definer, run after every INSERT on audit_log: it adds the event to its
--   owner's head in the same transaction, so every path that appends (an operation, an
--   import, `lorestore migrate`) keeps the head without being told, at the same cost per
--   event however many a transaction appends (see the table's comment).
-- Tenancy: audit_heads has row-level security forced; lorestore_app may SELECT the heads of
--   the owners it reads (the audit_log read policy) and has no INSERT, UPDATE, DELETE or
--   TRUNCATE on it: the app role moves a head only by appending an event, which its
--   audit_log policy already confines to the owners it may write. The definer function takes
--   no argument but the inserted row and touches nothing but that owner's head.
-- Compatibility: code of the previous release appends as before and the trigger keeps its
--   heads; it never reads them.
-- Verify: as lorestore_app with an actor bound, `SELECT * FROM audit_heads` shows that
--   actor's head, matching `SELECT count(*) FROM audit_log WHERE owner = ...` and its last
--   hash; `UPDATE audit_heads SET events = 0` fails with permission denied.

-- One live row per owner. The trigger below moves a head by inserting its next row and
-- deleting the one before (each found by its exact key), never by updating a row in place:
-- PostgreSQL keeps every version a transaction makes of one row, and each further update
-- walks them all, so an import or `migrate` appending thousands of events in one transaction
-- would pay for each event as many steps as events before it. Insert-and-delete costs the
-- same for the first event of a transaction and the ten-thousandth.
CREATE TABLE audit_heads (
    owner      text NOT NULL,
    events     bigint NOT NULL,
    last_hash  text NOT NULL,
    PRIMARY KEY (owner, events)
);

-- The chains already stored (id order is chain order). audit_log's policies would show the
-- owner role no rows, so they are lifted for this one statement, inside this transaction.
ALTER TABLE audit_log NO FORCE ROW LEVEL SECURITY;
INSERT INTO audit_heads (owner, events, last_hash)
SELECT DISTINCT ON (owner) owner, count(*) OVER (PARTITION BY owner), hash
FROM audit_log
ORDER BY owner, id DESC;
ALTER TABLE audit_log FORCE ROW LEVEL SECURITY;

ALTER TABLE audit_heads ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_heads FORCE ROW LEVEL SECURITY;
CREATE POLICY audit_heads_read ON audit_heads FOR SELECT
    USING (owner = ANY ((SELECT lorestore_owners())::text[]));
GRANT SELECT ON audit_heads TO lorestore_app;

-- Two appends of one owner that did not take its chain lock (raw SQL) would both read the
-- same head and insert the same next key: the second fails on the primary key, refusing the
-- fork instead of recording it.
CREATE FUNCTION lorestore_advance_audit_head() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
BEGIN
    -- One statement, one snapshot: the head read, its row deleted by its exact key, its
    -- successor inserted under the next key.
    WITH head AS (
        SELECT max(h.events) AS events FROM public.audit_heads AS h WHERE h.owner = NEW.owner
    ), gone AS (
        DELETE FROM public.audit_heads AS h USING head
        WHERE h.owner = NEW.owner AND h.events = head.events
    )
    INSERT INTO public.audit_heads (owner, events, last_hash)
    SELECT NEW.owner, coalesce(head.events, 0) + 1, NEW.hash FROM head;
    RETURN NULL;
END $$;

GRANT SELECT, INSERT, DELETE ON audit_heads TO lorestore_definer;
ALTER FUNCTION lorestore_advance_audit_head() OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_advance_audit_head() FROM PUBLIC;

CREATE TRIGGER audit_log_advance_head AFTER INSERT ON audit_log
    FOR EACH ROW EXECUTE FUNCTION lorestore_advance_audit_head();
