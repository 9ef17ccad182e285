-- 0029_index_dashboard_reads.sql
--
-- Why: the dashboard's pages (issue 22) read across an owner's scopes, and no index served
--   those reads, so each view read every lesson of the owner: memory_list under a prefix
--   (browse_by_updated / browse_by_seen, ordered by updated_at or seen_count), the review
--   queue (what awaits a person, by reason then newest first) and the per-scope inventory
--   (scope_counts); the overview's chart counted a month of audit events from their rows.
--   At 100k lessons those pages took  0.5-1 s.
-- What changes: indexes only, no rows. lessons_browse_updated and lessons_browse_seen give
--   the keyset browse its order within a state; lessons_by_trust serves a trust filter
--   across scopes and the queue's disputed and corroborated lessons; lessons_revisions,
--   lessons_recurring and lessons_outside_author are partial indexes holding only the
--   lessons each remaining queue reason can pick (the query reads each reason from its own
--   index, up to the page's limit); lessons_inventory covers scope_counts' columns, so the
--   counts read the index, not the lessons' values;
--   audit_log_activity covers audit_activity's columns (owner, time, action).
-- Tenancy: none; the service filters by owner (no row-level security in SQLite). Every index
--   leads with owner.
-- Compatibility: code of the previous release reads and writes the same columns; its
--   queries may use the indexes too. Writes keep seven more index entries of
--   a lesson current, and one more of each audit event.
-- Verify: `EXPLAIN QUERY PLAN` of scope_counts shows `USING COVERING INDEX
--   lessons_inventory`; of browse_by_updated with one owner, `USING INDEX
--   lessons_browse_updated` and no `TEMP B-TREE FOR ORDER BY`.

CREATE INDEX lessons_browse_updated ON lessons (owner, status, updated_at DESC, pk DESC);
CREATE INDEX lessons_browse_seen ON lessons (owner, status, seen_count DESC, pk DESC);
CREATE INDEX lessons_by_trust ON lessons (owner, trust, updated_at DESC, pk DESC);
CREATE INDEX lessons_revisions ON lessons (owner, updated_at DESC, pk DESC)
    WHERE pending_version IS NOT NULL;
CREATE INDEX lessons_recurring ON lessons (owner, updated_at DESC, pk DESC)
    WHERE trust = 'candidate' AND seen_count >= 2;
CREATE INDEX lessons_outside_author ON lessons (owner, updated_at DESC, pk DESC)
    WHERE json_extract(source, '$.author_association') IS NOT NULL;
CREATE INDEX lessons_inventory ON lessons (owner, scope, status, trust, expires_at);
CREATE INDEX audit_log_activity ON audit_log (owner, at, action);
