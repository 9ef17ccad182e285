-- 0042_walk_recent_recalls.sql
--
-- Why: a list of recent recalls (memory_recalls, `lorestore recalls`) read every recall of its
--   window and sorted them for the newest page: with 48k recalls in the day (a busy server's
--   day: every prompt of every agent logs one), 39 ms of the call's 67. recall_log_age on
--   (owner, at) could not give the page's order, which breaks ties by recall_id, nor serve
--   several owners (a person's own and their orgs') in one walk.
-- What changes: recall_log_newest on (owner, at, recall_id) replaces recall_log_age, whose
--   every use (an owner's window, the retention sweep's cutoff) it serves as well; the query
--   (recent_recalls) walks it backwards once per owner, each walk stopping at the page's size,
--   and merges the walks (1.9 ms for the same page).
-- Tenancy: an index only; recall_log's row-level security applies to the query as before
--   (the owner equality is leakproof, so the policy does not keep the index from use).
-- Compatibility: the previous release's query still runs, reading the window through the new
--   index or the table, though that release refuses a schema with migrations it does not know.
-- Verify: as lorestore_app, recent_recalls scans recall_log_newest once per owner and never
--   the table (tests/storage/test_recent_recalls.py).

CREATE INDEX recall_log_newest ON recall_log (owner, at, recall_id);
DROP INDEX recall_log_age;
