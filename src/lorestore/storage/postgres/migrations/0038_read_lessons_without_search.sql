-- 0038_read_lessons_without_search.sql
--
-- Why: every read of lesson rows (an address, a list page, the review queue, search, and
--   each recall's candidates: its full-text hits and each rung's newest and trusted) selected
--   `*` from lessons, and with it `search`, the generated tsvector that only the database's
--   own matching and ranking use (about 1 KB a lesson at 100k, more than the value itself).
--   The server wrote it out as text and the driver read it, for every row: a rung's 25
--   newest lessons took 0.88 ms against 0.60 ms without it, and a recall reads nine such
--   pages.
-- What changes: lesson_rows, a view of lessons with every column but `search`
--   (security_invoker, so the caller's row-level security applies as on the table). The
--   queries that return lesson rows read it (storage/postgres/queries.sql); those that rank
--   by each word's weight read `search` from lessons beside it, for their own computation.
--   Writes, the search functions and `lorestore migrate` are unchanged.
-- Tenancy: the view runs with the rights and policies of the role that queries it
--   (security_invoker = true): lorestore_app sees through it exactly the lessons
--   lessons_read lets it see. The view's owner grants nothing more.
-- Compatibility: additive; code of the previous release reads lessons as before. A column
--   added to lessons later must be added here (tests/storage/test_postgres_rls.py compares
--   the two).
-- Verify: as lorestore_app with an actor bound, `SELECT count(*) FROM lesson_rows` equals
--   `SELECT count(*) FROM lessons`; another owner's lessons are in neither
--   (tests/storage/test_postgres_rls.py).

CREATE VIEW public.lesson_rows WITH (security_invoker = true) AS
SELECT pk, owner, id, scope, key, value, value_digest, tags, kind, trust, status, version,
       seen_count, valid_from, valid_to, recorded_at, created_at, updated_at, archived_at,
       expires_at, source, depends_on, review, ext, pending_version
FROM public.lessons;

GRANT SELECT ON public.lesson_rows TO lorestore_app;
