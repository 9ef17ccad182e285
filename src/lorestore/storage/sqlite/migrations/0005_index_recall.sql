-- 0005_index_recall.sql
--
-- Why: recall takes, per rung of the ladder, the newest verified and corroborated lessons as
--   candidates besides the ones the task text matches; without an index that walks a busy
--   scope (tens of thousands of lessons) for every recall.
-- What changes: an index on (owner, scope, trust, updated_at).
-- Tenancy: none (an index).
-- Compatibility: additive.
-- Verify: `EXPLAIN QUERY PLAN` of the recall_trusted query uses lessons_trusted.

CREATE INDEX lessons_trusted ON lessons (owner, scope, trust, updated_at DESC)
    WHERE status = 'active';
