-- 0031_index_recalls_by_lesson.sql
--
-- Why: a lesson's recent recalls (the dashboard's Lesson page, memory_recalls with a
--   lesson id) were found by reading every recall of the window and looking for the lesson's
--   id in its offered and held lists (JSON of up to a hundred and more entries each):
--   O(recalls in 30 days), 13 ms for 200 recalls and growing with every prompt an agent
--   sends.
-- What changes: recall_lesson_ids, a full-text index holding, per recall (its rowid), the ids
--   of the lessons it offered or held, one token each (unicode61 with '-' a token character,
--   so a UUID is one token; detail=none: only which recalls hold a token). A lesson's
--   recalls are the index's rowids for its id. A full-text index rather than a table of
--   (lesson, recall) pairs: FTS5 writes each transaction's entries as one small segment and
--   merges them later, where a B-tree keyed by lesson would touch a page per lesson of every
--   recall (about 140) and made recall 2.4 times slower in the benchmark. Kept by triggers on
--   recall_log (an insert adds the recall's ids; a delete, such as the retention sweep's,
--   removes them) and backfilled here. The recall log is append-only: its rows are never
--   updated.
-- Tenancy: none; the service filters by owner (no row-level security in SQLite); the
--   query joins back to recall_log and filters there.
-- Compatibility: code of the previous release never reads it; its recalls keep it current
--   through the triggers, so moving back and forth is safe.
-- Verify: `SELECT count(*) FROM recall_lesson_ids` equals `SELECT count(*) FROM recall_log`;
--   recalls_of_lesson returns what the scan of 0001 returned.

CREATE VIRTUAL TABLE recall_lesson_ids USING fts5 (
    ids, tokenize = "unicode61 tokenchars '-'", detail = none, columnsize = 0
);

INSERT INTO recall_lesson_ids (rowid, ids)
SELECT r.rowid,
       (SELECT group_concat(json_extract(e.value, '$.lesson_id'), ' ')
        FROM (SELECT value FROM json_each(r.offered)
              UNION ALL SELECT value FROM json_each(r.held)) AS e)
FROM recall_log AS r;

CREATE TRIGGER recall_lesson_ids_insert AFTER INSERT ON recall_log BEGIN
    INSERT INTO recall_lesson_ids (rowid, ids)
    VALUES (new.rowid,
            (SELECT group_concat(json_extract(e.value, '$.lesson_id'), ' ')
             FROM (SELECT value FROM json_each(new.offered)
                   UNION ALL SELECT value FROM json_each(new.held)) AS e));
END;

CREATE TRIGGER recall_lesson_ids_delete AFTER DELETE ON recall_log BEGIN
    DELETE FROM recall_lesson_ids WHERE rowid = old.rowid;
END;
