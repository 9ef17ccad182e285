-- 0031_index_recalls_by_lesson.sql
--
-- Why: a lesson's recent recalls (the dashboard's Lesson page, memory_recalls with a
--   lesson id) were found by reading every recall of the window and looking for the lesson's
--   id in its offered and held lists (JSON of up to a hundred entries each): O(recalls in
--   30 days), 13 ms for 200 recalls and growing with every prompt an agent sends.
-- What changes: lesson_recalls, one row per (recall, lesson it offered or held), kept by
--   triggers on recall_log (an insert adds the recall's lessons, a delete, such as the
--   retention sweep's, removes them) and backfilled here. The recall log is append-only:
--   its rows are never updated. A lesson's recalls are then a seek on (owner, lesson_id)
--   in time order.
-- Tenancy: none; the service filters by owner (no row-level security in SQLite). The table
--   leads with owner.
-- Compatibility: code of the previous release never reads it; its recalls keep it current
--   through the triggers, so moving back and forth is safe. Each recall adds one row per
--   lesson offered or held (about a hundred small rows, inside the recall's transaction).
-- Verify: `SELECT count(*) FROM lesson_recalls` equals the sum over recall_log of the
--   distinct lesson ids of offered and held; recent_recalls with a lesson id returns what
--   the scan of 0001 returned.

CREATE TABLE lesson_recalls (
    owner      TEXT NOT NULL,
    lesson_id  TEXT NOT NULL,
    at         TEXT NOT NULL,
    recall_id  TEXT NOT NULL,
    PRIMARY KEY (owner, lesson_id, at, recall_id)
) WITHOUT ROWID;

INSERT OR IGNORE INTO lesson_recalls (owner, lesson_id, at, recall_id)
SELECT r.owner, json_extract(e.value, '$.lesson_id'), r.at, r.recall_id
FROM recall_log AS r, json_each(r.offered) AS e
UNION ALL
SELECT r.owner, json_extract(e.value, '$.lesson_id'), r.at, r.recall_id
FROM recall_log AS r, json_each(r.held) AS e;

CREATE TRIGGER lesson_recalls_insert AFTER INSERT ON recall_log BEGIN
    INSERT OR IGNORE INTO lesson_recalls (owner, lesson_id, at, recall_id)
    SELECT new.owner, json_extract(e.value, '$.lesson_id'), new.at, new.recall_id
    FROM json_each(new.offered) AS e
    UNION ALL
    SELECT new.owner, json_extract(e.value, '$.lesson_id'), new.at, new.recall_id
    FROM json_each(new.held) AS e;
END;

CREATE TRIGGER lesson_recalls_delete AFTER DELETE ON recall_log BEGIN
    DELETE FROM lesson_recalls
    WHERE owner = old.owner AND at = old.at AND recall_id = old.recall_id
      AND lesson_id IN (SELECT json_extract(value, '$.lesson_id') FROM json_each(old.offered)
                        UNION ALL
                        SELECT json_extract(value, '$.lesson_id') FROM json_each(old.held));
END;
