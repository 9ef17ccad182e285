-- 0011_recall_create_addresses.sql
--
-- Why: recall's full-text pass ranked every lesson the task's words matched, in every scope
--   of every owner, and only then kept the ones on the context's ladder: a common word matches
--   ~18k of 100k lessons, and BM25 over all of them took 20-27 ms while the ladder held a few
--   hundred of the matches (benchmarks/recall_bench.py: p95 18.7 ms at 100k, target 10 ms).
--   Checking each match's address before ranking it needs, per match, a lookup by pk of
--   (owner, scope, status, trust). From the lessons table that costs more than the ranking
--   (wide rows, ~1.2 us a match); from an index on those columns ~0.35 us (5 MB at 100k
--   lessons, more than SQLite's default 2 MB page cache). This table answers it in ~0.15 us:
--   one small row per lesson, keyed by pk, with an integer that stands for the address.
-- What changes: recall_addresses, one integer id per (owner, scope) that has lessons;
--   recall_lessons, one row (pk, address) per lesson recall considers: active and not
--   rejected (expired ones included, to be held as expired). Triggers on lessons keep both:
--   after insert; after an update of status or trust that makes a lesson enter or leave
--   recall; after delete, which also drops an address left without lessons, so that a hard
--   delete leaves no scope name behind. Both are filled from the lessons present.
--   Only recall_by_text reads them.
-- Tenancy: the owner is half of every address, and the query matches (owner, scope) pairs;
--   the embedded store has no row-level security (the service filters by owner).
-- Compatibility: additive. Earlier code never reads the tables, and every write path (the
--   service, import, `lorestore migrate`) goes through the triggers.
-- Verify: `SELECT count(*) FROM recall_lessons` equals
--   `SELECT count(*) FROM lessons WHERE status = 'active' AND trust != 'rejected'`;
--   EXPLAIN QUERY PLAN of recall_by_text shows SEARCH r USING INTEGER PRIMARY KEY (rowid=?).

CREATE TABLE recall_addresses (
    id     INTEGER PRIMARY KEY,
    owner  TEXT NOT NULL,
    scope  TEXT NOT NULL,
    UNIQUE (owner, scope)
);

CREATE TABLE recall_lessons (
    pk       INTEGER PRIMARY KEY,    -- lessons.pk
    address  INTEGER NOT NULL        -- recall_addresses.id
);

-- An upsert, not INSERT OR IGNORE: an outer INSERT OR REPLACE / OR ABORT would override the
-- trigger's OR IGNORE (renumbering the address, or failing the write); it leaves an upsert be.
CREATE TRIGGER recall_lessons_insert AFTER INSERT ON lessons BEGIN
    INSERT INTO recall_addresses (owner, scope) VALUES (new.owner, new.scope)
    ON CONFLICT (owner, scope) DO NOTHING;
    INSERT INTO recall_lessons (pk, address)
    SELECT new.pk, id FROM recall_addresses
    WHERE owner = new.owner AND scope = new.scope
      AND new.status = 'active' AND new.trust != 'rejected';
END;

CREATE TRIGGER recall_lessons_update AFTER UPDATE OF status, trust ON lessons
WHEN (old.status = 'active' AND old.trust != 'rejected')
     IS NOT (new.status = 'active' AND new.trust != 'rejected')
BEGIN
    DELETE FROM recall_lessons WHERE pk = old.pk;
    INSERT INTO recall_lessons (pk, address)
    SELECT new.pk, id FROM recall_addresses
    WHERE owner = new.owner AND scope = new.scope
      AND new.status = 'active' AND new.trust != 'rejected';
END;

CREATE TRIGGER recall_lessons_delete AFTER DELETE ON lessons BEGIN
    DELETE FROM recall_lessons WHERE pk = old.pk;
    DELETE FROM recall_addresses
    WHERE owner = old.owner AND scope = old.scope
      AND NOT EXISTS (SELECT 1 FROM lessons WHERE owner = old.owner AND scope = old.scope);
END;

INSERT INTO recall_addresses (owner, scope)
SELECT DISTINCT owner, scope FROM lessons ORDER BY owner, scope;

INSERT INTO recall_lessons (pk, address)
SELECT l.pk, a.id
FROM lessons AS l JOIN recall_addresses AS a ON a.owner = l.owner AND a.scope = l.scope
WHERE l.status = 'active' AND l.trust != 'rejected';
