-- 0031_index_recalls_by_lesson.sql
--
-- Why: a lesson's recent recalls (the dashboard's Lesson page, memory_recalls with a
--   lesson id) were found by testing every recall of the window (`offered @> ... OR held @>
--   ...` on jsonb lists of a hundred and more entries each): O(recalls in 30 days), growing
--   with every prompt an agent sends.
-- What changes: GIN indexes (jsonb_path_ops) on recall_log's offered and held lists, which
--   answer that containment test from the index. GIN's pending list takes each recall's
--   entries as one append and folds them in later (fastupdate, the default), where a table of
--   (lesson, recall) pairs keyed by lesson would write an index entry per lesson of every
--   recall (about 140) in the recall's transaction.
-- Tenancy: unchanged; recall_log's row-level security applies to every read through the
--   indexes.
-- Compatibility: code of the previous release reads recall_log as before (its scan may use
--   the indexes); each recall's insert maintains them.
-- Verify: `EXPLAIN SELECT * FROM recall_log WHERE held @> '[{"lesson_id": "x"}]'` plans a
--   bitmap scan of recall_log_held.

CREATE INDEX recall_log_offered ON public.recall_log USING gin (offered jsonb_path_ops);
CREATE INDEX recall_log_held ON public.recall_log USING gin (held jsonb_path_ops);
