-- 0010_reindex_trusted.sql
--
-- Why: recall's "newest verified or corroborated" query walked a busy scope's listing index
--   in date order, filtering on trust (39 ms in a 56k-lesson scope with none verified,
--   benchmarks/recall_bench.py); the partial trusted index of 0005 lost to it because both
--   match three equality columns. A full index on (owner, scope, trust, updated_at), with the
--   query keeping `status` out of index matching, makes the trusted scan a range scan.
-- What changes: lessons_trusted is rebuilt without its partial condition.
-- Tenancy: none (an index).
-- Compatibility: the recall_trusted query of this release writes `+status`.
-- Verify: EXPLAIN QUERY PLAN of recall_trusted shows SEARCH ... USING INDEX lessons_trusted.

DROP INDEX lessons_trusted;
CREATE INDEX lessons_trusted ON lessons (owner, scope, trust, updated_at DESC);
