-- 0005_index_recall.sql
--
-- Why: recall takes, per rung of the ladder, the newest verified and corroborated lessons as
--   candidates besides the ones the task text matches; without an index that walks a busy
--   scope for every recall.
-- What changes: a partial index on (owner, scope, trust, updated_at) of active lessons, and
--   the recall log's `recall_id` lookups use its primary key.
-- Tenancy: none (an index); RLS still filters every row.
-- Compatibility: additive.
-- Verify: EXPLAIN of the recall_trusted query shows an index scan on lessons_trusted.

CREATE INDEX lessons_trusted ON lessons (owner, scope, trust, updated_at DESC)
    WHERE status = 'active';
