-- 0023_create_audit_heads.sql
--
-- Why: each owner's audit events form a hash chain, which shows an edited, removed or
--   reordered event, but not the newest events deleted: what is left of a chain cut at its
--   end still links from the first event to its new last one. A head kept beside the chain
--   (how many events it holds, the last one's hash) and advanced by every append makes the
--   cut visible: `lorestore audit verify` compares the chain with its head, and opening the
--   store compares each head's hash with its owner's last event (one indexed row an owner).
-- What changes: the table audit_heads (owner, events, last_hash), filled from the chains
--   already stored; triggers after every INSERT on audit_log start or advance the owner's
--   head in the same transaction, so every path that appends (an operation, an import,
--   `lorestore migrate`) keeps it without being told; guard triggers refuse to delete a
--   head, to insert one but for an owner's first event, or to update one but by one event.
-- Tenancy: none (the embedded store has no roles). Whoever can write the file can also drop
--   these triggers: the head shows a cut made by anything that does not know of it (a DELETE
--   with the append-only trigger dropped, a tool that edits rows), not one made by someone
--   who rewrites the heads too. PostgreSQL's twin keeps the head beyond the app role's reach.
-- Compatibility: code of the previous release appends as before and the trigger keeps its
--   heads; it never reads them.
-- Verify: `SELECT owner, events, last_hash FROM audit_heads` matches `SELECT owner,
--   count(*) ... FROM audit_log GROUP BY owner` and each owner's last hash;
--   `UPDATE audit_heads SET events = 0` fails with "audit_heads moves only with audit_log".

CREATE TABLE audit_heads (
    owner      TEXT PRIMARY KEY,
    events     INTEGER NOT NULL,
    last_hash  TEXT NOT NULL
) WITHOUT ROWID;

-- The chains already stored: each owner's count and the hash of its last event (id order is
-- chain order).
INSERT INTO audit_heads (owner, events, last_hash)
SELECT a.owner, a.events, l.hash
FROM (SELECT owner, count(*) AS events, max(id) AS last_id FROM audit_log GROUP BY owner) AS a
JOIN audit_log AS l ON l.id = a.last_id;

CREATE TRIGGER audit_heads_no_delete BEFORE DELETE ON audit_heads
BEGIN
    SELECT RAISE(ABORT, 'audit_heads moves only with audit_log');
END;

-- A head is born with its owner's first event and moves one event at a time, to the hash of
-- the event just appended: nothing else may insert or update one.
-- (A head that exists is never inserted again: INSERT OR REPLACE would otherwise reset it,
-- since REPLACE deletes without firing the delete trigger.)
CREATE TRIGGER audit_heads_insert_guard BEFORE INSERT ON audit_heads
WHEN NEW.events IS NOT 1
    OR NEW.last_hash IS NOT (SELECT hash FROM audit_log WHERE owner = NEW.owner
                             ORDER BY id DESC LIMIT 1)
    OR EXISTS (SELECT 1 FROM audit_heads WHERE owner = NEW.owner)
BEGIN
    SELECT RAISE(ABORT, 'audit_heads moves only with audit_log');
END;

-- An update may only add one event (the trigger below also sets the hash of the event just
-- appended; verify finds a hash set otherwise, as head_mismatch). The count alone is checked
-- here: a subquery per append would cost more than the rest of the head's upkeep.
CREATE TRIGGER audit_heads_update_guard BEFORE UPDATE ON audit_heads
WHEN NEW.owner IS NOT OLD.owner OR NEW.events IS NOT OLD.events + 1
BEGIN
    SELECT RAISE(ABORT, 'audit_heads moves only with audit_log');
END;

-- Two triggers rather than one doing both: an INSERT statement in a trigger costs its share
-- on every row even when it inserts nothing, and only an owner's first event needs one.
-- Their conditions hold for neither in whichever order SQLite fires them: a head the first
-- trigger has just started already names this event.
CREATE TRIGGER audit_log_advance_head AFTER INSERT ON audit_log
WHEN EXISTS (SELECT 1 FROM audit_heads WHERE owner = NEW.owner AND last_hash IS NOT NEW.hash)
BEGIN
    UPDATE audit_heads SET events = events + 1, last_hash = NEW.hash WHERE owner = NEW.owner;
END;

CREATE TRIGGER audit_log_first_head AFTER INSERT ON audit_log
WHEN NOT EXISTS (SELECT 1 FROM audit_heads WHERE owner = NEW.owner)
BEGIN
    INSERT INTO audit_heads (owner, events, last_hash) VALUES (NEW.owner, 1, NEW.hash);
END;
