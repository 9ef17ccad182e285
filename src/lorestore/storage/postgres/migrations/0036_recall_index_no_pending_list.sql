-- 0036_recall_index_no_pending_list.sql
--
-- Why: a lesson's recent recalls (the dashboard's Lesson page, memory_recalls with a lesson
--   id) were read by a scan of every recall of the window, not through migration 0031's GIN
--   indexes: those folded each recall's entries in later (fastupdate), and until a vacuum
--   folded them every search of the index read the whole pending list, and the planner,
--   costing that list, chose the scan. At 100k lessons with 1,000 recalls logged (their lists
--   of a hundred lessons each, 4 MB), the lookup took 37-39 ms, the Lesson page 55-93 ms p95;
--   with the pending list folded in, the index finds them in a tenth of a millisecond.
-- What changes: both indexes take each recall's entries into the index at once (fastupdate
--   off), and the entries waiting in their pending lists are folded in now. A recall's insert
--   costs about 0.6 ms more (200 recalls of the benchmark's corpus: 0.8 against 0.2 ms each).
-- Tenancy: unchanged; recall_log's row-level security applies to every read through the
--   indexes.
-- Compatibility: storage parameters only; every query of the previous release runs as before.
-- Verify: `SELECT reloptions FROM pg_class WHERE relname = 'recall_log_held'` shows
--   fastupdate=off; the Lesson page's query plans the GIN indexes without enable_seqscan off
--   (tests/storage/test_recalls_by_lesson.py).

ALTER INDEX public.recall_log_offered SET (fastupdate = off);
ALTER INDEX public.recall_log_held SET (fastupdate = off);
SELECT gin_clean_pending_list('public.recall_log_offered'::regclass);
SELECT gin_clean_pending_list('public.recall_log_held'::regclass);
