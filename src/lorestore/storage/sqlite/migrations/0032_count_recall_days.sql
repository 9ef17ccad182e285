-- 0032_count_recall_days.sql
--
-- Why: the dashboard's overview charts recalls and the lessons they held per day
--   (memory_activity). It counted them from the recall log: every recall of the last 30 days
--   read, and the length of its held list (a hundred and more entries) summed, a cost that
--   grows with every prompt an agent sends.
-- What changes: recall_day_counts, per (owner, UTC day): the recalls logged and the lessons
--   they held, kept by triggers in the transaction of every insert and delete of the log (as
--   audit_day_counts, migration 0030) and backfilled here. A day's row goes when its last
--   recall does (the retention sweep, an owner's purge), so the counters always equal a
--   recount of the log. The log is append-only: its rows are never updated.
-- Tenancy: none; the service filters by owner (no row-level security in SQLite). The table
--   leads with owner.
-- Compatibility: code of the previous release neither reads nor writes the table; its
--   recalls and sweeps keep it current through the triggers, so moving back and forth is
--   safe. Each recall's insert does one more upsert.
-- Verify: `SELECT sum(recalls), sum(held) FROM recall_day_counts` equals `SELECT count(*),
--   sum(json_array_length(held)) FROM recall_log` (tests/storage/test_scope_tallies.py).

CREATE TABLE recall_day_counts (
    owner    TEXT NOT NULL,
    day      TEXT NOT NULL,      -- YYYY-MM-DD, UTC
    recalls  INTEGER NOT NULL CHECK (recalls >= 0),
    held     INTEGER NOT NULL CHECK (held >= 0),
    PRIMARY KEY (owner, day)
) WITHOUT ROWID;

INSERT INTO recall_day_counts (owner, day, recalls, held)
SELECT owner, substr(at, 1, 10), count(*), sum(json_array_length(held)) FROM recall_log
GROUP BY owner, substr(at, 1, 10);

CREATE TRIGGER recall_day_counts_insert AFTER INSERT ON recall_log BEGIN
    INSERT INTO recall_day_counts (owner, day, recalls, held)
    VALUES (new.owner, substr(new.at, 1, 10), 1, json_array_length(new.held))
    ON CONFLICT (owner, day) DO UPDATE SET
        recalls = recalls + 1, held = held + excluded.held;
END;

CREATE TRIGGER recall_day_counts_delete AFTER DELETE ON recall_log BEGIN
    UPDATE recall_day_counts
    SET recalls = recalls - 1, held = held - json_array_length(old.held)
    WHERE owner = old.owner AND day = substr(old.at, 1, 10);
    DELETE FROM recall_day_counts
    WHERE owner = old.owner AND day = substr(old.at, 1, 10) AND recalls = 0;
END;
