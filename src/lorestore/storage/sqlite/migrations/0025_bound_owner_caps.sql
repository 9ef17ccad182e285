-- 0025_bound_owner_caps.sql
--
-- Why: three things were wrong with the caps of migration 0003. The personal store had a
--   hidden cap of 10,000 active lessons (owner_stats.max_active DEFAULT 10000) that a person
--   met only when an import refused half its file; a store of one person needs no cap. The
--   cap bounded active lessons only: archived lessons, every version and the records of an
--   unknown type an import keeps (up to 16 MiB each) were unlimited, so a server's write
--   token could fill the disk. And a negative count was not refused.
-- What changes: owner_stats is rebuilt with active_lessons CHECK (>= 0), a byte counter
--   stored_bytes CHECK (>= 0) and caps max_active and max_bytes that may be NULL: NULL
--   follows the store's default. A one-row table cap_defaults holds that default (NULL: no
--   cap); here, on the embedded store, it is no cap at all. `lorestore db cap` sets both.
--   stored_bytes counts the UTF-8 bytes of every lesson's value and ext, of every version's
--   value, of every kept foreign record and of the ext an import keeps on tombstones and
--   scope policies, whatever the lessons' status; the triggers of 0003
--   give way to ones that keep both counters and refuse an increase beyond either cap
--   (RAISE 'cap_exceeded' and 'cap_exceeded:stored_bytes'). A lesson's versions are
--   subtracted before it is deleted (they go by the foreign key's cascade, which cannot
--   look their lesson up any more).
--   Existing stores: a max_active of exactly 10,000 is the hidden default (0003 wrote it in
--   every row the triggers made), so it becomes NULL (no cap here); any other value was set
--   with `lorestore db cap` and is kept. A cap set to exactly 10,000 by hand cannot be told
--   from the default and is lifted too: set it again with `lorestore db cap`. Both counters
--   are recounted from the rows.
-- Tenancy: none; the service filters by owner (no row-level security in SQLite). A team
--   served from this store sets a default with `lorestore db cap default ...`.
-- Compatibility: code of the previous release inserts owner_stats rows (owner, max_active)
--   and reads cap_exceeded from the same messages; both keep working.
-- Verify: `SELECT * FROM cap_defaults` is one row of NULLs; `SELECT owner, active_lessons,
--   stored_bytes, max_active FROM owner_stats` shows the recounted rows, max_active NULL.

DROP TRIGGER owner_stats_insert;
DROP TRIGGER owner_stats_delete;
DROP TRIGGER owner_stats_archive;
DROP TRIGGER owner_stats_restore;

CREATE TABLE cap_defaults (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    max_active  INTEGER CHECK (max_active >= 0),
    max_bytes   INTEGER CHECK (max_bytes >= 0)
);

INSERT INTO cap_defaults (id, max_active, max_bytes) VALUES (1, NULL, NULL);

CREATE TABLE owner_stats_counted (
    owner           TEXT PRIMARY KEY,
    active_lessons  INTEGER NOT NULL DEFAULT 0 CHECK (active_lessons >= 0),
    max_active      INTEGER CHECK (max_active >= 0),
    stored_bytes    INTEGER NOT NULL DEFAULT 0 CHECK (stored_bytes >= 0),
    max_bytes       INTEGER CHECK (max_bytes >= 0)
);

INSERT INTO owner_stats_counted (owner, max_active)
SELECT owner, nullif(max_active, 10000) FROM owner_stats;

INSERT INTO owner_stats_counted (owner)
SELECT owner FROM lessons UNION SELECT owner FROM foreign_records
UNION SELECT owner FROM tombstones UNION SELECT owner FROM scope_policies
EXCEPT SELECT owner FROM owner_stats_counted;

UPDATE owner_stats_counted SET
    active_lessons = (SELECT count(*) FROM lessons AS l
                      WHERE l.owner = owner_stats_counted.owner AND l.status = 'active'),
    stored_bytes =
        (SELECT coalesce(sum(length(CAST(l.value AS BLOB)) + length(CAST(l.ext AS BLOB))), 0)
         FROM lessons AS l WHERE l.owner = owner_stats_counted.owner)
        + (SELECT coalesce(sum(length(CAST(v.value AS BLOB))), 0)
           FROM lesson_versions AS v JOIN lessons AS l ON l.pk = v.lesson_pk
           WHERE l.owner = owner_stats_counted.owner)
        + (SELECT coalesce(sum(length(CAST(f.record AS BLOB))), 0)
           FROM foreign_records AS f WHERE f.owner = owner_stats_counted.owner)
        + (SELECT coalesce(sum(length(CAST(t.ext AS BLOB))), 0)
           FROM tombstones AS t WHERE t.owner = owner_stats_counted.owner)
        + (SELECT coalesce(sum(length(CAST(p.ext AS BLOB))), 0)
           FROM scope_policies AS p WHERE p.owner = owner_stats_counted.owner);

DROP TABLE owner_stats;
ALTER TABLE owner_stats_counted RENAME TO owner_stats;

-- A new lesson: counted, then refused if it takes its owner beyond a cap.
CREATE TRIGGER owner_stats_lesson_insert AFTER INSERT ON lessons BEGIN
    INSERT INTO owner_stats (owner, active_lessons, stored_bytes)
    VALUES (new.owner, new.status = 'active',
            length(CAST(new.value AS BLOB)) + length(CAST(new.ext AS BLOB)))
    ON CONFLICT (owner) DO UPDATE SET
        active_lessons = active_lessons + excluded.active_lessons,
        stored_bytes = stored_bytes + excluded.stored_bytes;
    SELECT RAISE(ABORT, 'cap_exceeded')
    WHERE new.status = 'active' AND (
        SELECT s.active_lessons > coalesce(s.max_active, d.max_active)
        FROM owner_stats AS s, cap_defaults AS d WHERE s.owner = new.owner);
    SELECT RAISE(ABORT, 'cap_exceeded:stored_bytes')
    WHERE (SELECT s.stored_bytes > coalesce(s.max_bytes, d.max_bytes)
           FROM owner_stats AS s, cap_defaults AS d WHERE s.owner = new.owner);
END;

-- Archive, restore, a new value or ext: the old row's share out, the new row's in; only a
-- restore can pass the active cap, only growth the byte cap.
CREATE TRIGGER owner_stats_lesson_update AFTER UPDATE OF owner, status, value, ext ON lessons
BEGIN
    UPDATE owner_stats SET
        active_lessons = active_lessons - (old.status = 'active'),
        stored_bytes = stored_bytes
            - length(CAST(old.value AS BLOB)) - length(CAST(old.ext AS BLOB))
    WHERE owner = old.owner;
    INSERT INTO owner_stats (owner, active_lessons, stored_bytes)
    VALUES (new.owner, new.status = 'active',
            length(CAST(new.value AS BLOB)) + length(CAST(new.ext AS BLOB)))
    ON CONFLICT (owner) DO UPDATE SET
        active_lessons = active_lessons + excluded.active_lessons,
        stored_bytes = stored_bytes + excluded.stored_bytes;
    SELECT RAISE(ABORT, 'cap_exceeded')
    WHERE new.status = 'active' AND (old.status <> 'active' OR old.owner <> new.owner) AND (
        SELECT s.active_lessons > coalesce(s.max_active, d.max_active)
        FROM owner_stats AS s, cap_defaults AS d WHERE s.owner = new.owner);
    SELECT RAISE(ABORT, 'cap_exceeded:stored_bytes')
    WHERE (old.owner <> new.owner
           OR length(CAST(new.value AS BLOB)) + length(CAST(new.ext AS BLOB))
              > length(CAST(old.value AS BLOB)) + length(CAST(old.ext AS BLOB)))
      AND (SELECT s.stored_bytes > coalesce(s.max_bytes, d.max_bytes)
           FROM owner_stats AS s, cap_defaults AS d WHERE s.owner = new.owner);
END;

-- Before the row goes: the cascade deletes its versions afterwards, when they can no longer
-- be traced to an owner, so their bytes are taken out here.
CREATE TRIGGER owner_stats_lesson_delete BEFORE DELETE ON lessons BEGIN
    UPDATE owner_stats SET
        active_lessons = active_lessons - (old.status = 'active'),
        stored_bytes = stored_bytes
            - length(CAST(old.value AS BLOB)) - length(CAST(old.ext AS BLOB))
            - (SELECT coalesce(sum(length(CAST(v.value AS BLOB))), 0)
               FROM lesson_versions AS v WHERE v.lesson_pk = old.pk)
    WHERE owner = old.owner;
END;

CREATE TRIGGER owner_stats_version_insert AFTER INSERT ON lesson_versions BEGIN
    UPDATE owner_stats SET stored_bytes = stored_bytes + length(CAST(new.value AS BLOB))
    WHERE owner = (SELECT owner FROM lessons WHERE pk = new.lesson_pk);
    SELECT RAISE(ABORT, 'cap_exceeded:stored_bytes')
    WHERE (SELECT s.stored_bytes > coalesce(s.max_bytes, d.max_bytes)
           FROM owner_stats AS s, cap_defaults AS d
           WHERE s.owner = (SELECT owner FROM lessons WHERE pk = new.lesson_pk));
END;

-- A kept foreign record, and the ext an import keeps on a tombstone or a scope policy.
CREATE TRIGGER owner_stats_foreign_insert AFTER INSERT ON foreign_records BEGIN
    INSERT INTO owner_stats (owner, stored_bytes)
    VALUES (new.owner, length(CAST(new.record AS BLOB)))
    ON CONFLICT (owner) DO UPDATE SET stored_bytes = stored_bytes + excluded.stored_bytes;
    SELECT RAISE(ABORT, 'cap_exceeded:stored_bytes')
    WHERE (SELECT s.stored_bytes > coalesce(s.max_bytes, d.max_bytes)
           FROM owner_stats AS s, cap_defaults AS d WHERE s.owner = new.owner);
END;

CREATE TRIGGER owner_stats_foreign_update AFTER UPDATE OF owner, record ON foreign_records BEGIN
    UPDATE owner_stats SET stored_bytes = stored_bytes - length(CAST(old.record AS BLOB))
    WHERE owner = old.owner;
    INSERT INTO owner_stats (owner, stored_bytes)
    VALUES (new.owner, length(CAST(new.record AS BLOB)))
    ON CONFLICT (owner) DO UPDATE SET stored_bytes = stored_bytes + excluded.stored_bytes;
    SELECT RAISE(ABORT, 'cap_exceeded:stored_bytes')
    WHERE (old.owner <> new.owner
           OR length(CAST(new.record AS BLOB)) > length(CAST(old.record AS BLOB)))
      AND (SELECT s.stored_bytes > coalesce(s.max_bytes, d.max_bytes)
           FROM owner_stats AS s, cap_defaults AS d WHERE s.owner = new.owner);
END;

CREATE TRIGGER owner_stats_foreign_delete AFTER DELETE ON foreign_records BEGIN
    UPDATE owner_stats SET stored_bytes = stored_bytes - length(CAST(old.record AS BLOB))
    WHERE owner = old.owner;
END;

CREATE TRIGGER owner_stats_tombstone_insert AFTER INSERT ON tombstones BEGIN
    INSERT INTO owner_stats (owner, stored_bytes)
    VALUES (new.owner, length(CAST(new.ext AS BLOB)))
    ON CONFLICT (owner) DO UPDATE SET stored_bytes = stored_bytes + excluded.stored_bytes;
    SELECT RAISE(ABORT, 'cap_exceeded:stored_bytes')
    WHERE (SELECT s.stored_bytes > coalesce(s.max_bytes, d.max_bytes)
           FROM owner_stats AS s, cap_defaults AS d WHERE s.owner = new.owner);
END;

CREATE TRIGGER owner_stats_tombstone_update AFTER UPDATE OF owner, ext ON tombstones BEGIN
    UPDATE owner_stats SET stored_bytes = stored_bytes - length(CAST(old.ext AS BLOB))
    WHERE owner = old.owner;
    INSERT INTO owner_stats (owner, stored_bytes)
    VALUES (new.owner, length(CAST(new.ext AS BLOB)))
    ON CONFLICT (owner) DO UPDATE SET stored_bytes = stored_bytes + excluded.stored_bytes;
    SELECT RAISE(ABORT, 'cap_exceeded:stored_bytes')
    WHERE (old.owner <> new.owner
           OR length(CAST(new.ext AS BLOB)) > length(CAST(old.ext AS BLOB)))
      AND (SELECT s.stored_bytes > coalesce(s.max_bytes, d.max_bytes)
           FROM owner_stats AS s, cap_defaults AS d WHERE s.owner = new.owner);
END;

CREATE TRIGGER owner_stats_tombstone_delete AFTER DELETE ON tombstones BEGIN
    UPDATE owner_stats SET stored_bytes = stored_bytes - length(CAST(old.ext AS BLOB))
    WHERE owner = old.owner;
END;

CREATE TRIGGER owner_stats_policy_insert AFTER INSERT ON scope_policies BEGIN
    INSERT INTO owner_stats (owner, stored_bytes)
    VALUES (new.owner, length(CAST(new.ext AS BLOB)))
    ON CONFLICT (owner) DO UPDATE SET stored_bytes = stored_bytes + excluded.stored_bytes;
    SELECT RAISE(ABORT, 'cap_exceeded:stored_bytes')
    WHERE (SELECT s.stored_bytes > coalesce(s.max_bytes, d.max_bytes)
           FROM owner_stats AS s, cap_defaults AS d WHERE s.owner = new.owner);
END;

CREATE TRIGGER owner_stats_policy_update AFTER UPDATE OF owner, ext ON scope_policies BEGIN
    UPDATE owner_stats SET stored_bytes = stored_bytes - length(CAST(old.ext AS BLOB))
    WHERE owner = old.owner;
    INSERT INTO owner_stats (owner, stored_bytes)
    VALUES (new.owner, length(CAST(new.ext AS BLOB)))
    ON CONFLICT (owner) DO UPDATE SET stored_bytes = stored_bytes + excluded.stored_bytes;
    SELECT RAISE(ABORT, 'cap_exceeded:stored_bytes')
    WHERE (old.owner <> new.owner
           OR length(CAST(new.ext AS BLOB)) > length(CAST(old.ext AS BLOB)))
      AND (SELECT s.stored_bytes > coalesce(s.max_bytes, d.max_bytes)
           FROM owner_stats AS s, cap_defaults AS d WHERE s.owner = new.owner);
END;

CREATE TRIGGER owner_stats_policy_delete AFTER DELETE ON scope_policies BEGIN
    UPDATE owner_stats SET stored_bytes = stored_bytes - length(CAST(old.ext AS BLOB))
    WHERE owner = old.owner;
END;
