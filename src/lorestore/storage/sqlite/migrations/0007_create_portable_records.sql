-- 0007_create_portable_records.sql
--
-- Why: `lorestore import` keeps what it does not understand (DESIGN §3 `ext`). Lessons have
--   had `ext` since 0001, but tombstones and scope policies had nowhere to keep the unknown
--   fields of an imported record, and a line whose `type` this version does not know (one
--   written by a newer lorestore or another tool) had nowhere at all. Dropping them would
--   break the promise that a file imported and exported again comes back whole; refusing
--   them would make a newer file unreadable by an older lorestore. docs/format.md.
-- What changes: `tombstones.ext` and `scope_policies.ext` (JSON objects, default '{}'); a
--   table `foreign_records`: one row per imported record of an unknown type, keyed on
--   (owner, SHA-256 of its canonical JSON) so that importing it twice keeps one row, holding
--   the record as given, its type, the scope it named (if it named a valid one) and who
--   imported it when. Nothing reads a foreign record except `lorestore export`, which writes
--   it back out; no recall, search or list ever serves one.
-- Tenancy: `foreign_records` keys on `owner` first like every tenant table. Its owner is the
--   tenant the record's scope resolves to for the importer (scope bindings), or the importer
--   itself when the record names no scope; the service filters every read by owner.
-- Compatibility: additive. Code that predates it never reads the new columns or table, and
--   the column defaults keep its inserts valid.
-- Verify: `PRAGMA table_info(tombstones)` lists ext; importing a file with the line
--   `{"type": "note", "text": "x"}` twice leaves one row in foreign_records.

ALTER TABLE tombstones ADD COLUMN ext TEXT NOT NULL DEFAULT '{}';

ALTER TABLE scope_policies ADD COLUMN ext TEXT NOT NULL DEFAULT '{}';

CREATE TABLE foreign_records (
    owner         TEXT NOT NULL REFERENCES principals (id),
    digest        TEXT NOT NULL,          -- SHA-256 of the record's canonical JSON
    type          TEXT NOT NULL,
    scope         TEXT,                   -- the scope the record named, normalised, if valid
    record        TEXT NOT NULL,          -- JSON object, as imported
    imported_at   TEXT NOT NULL,
    imported_by   TEXT NOT NULL,
    PRIMARY KEY (owner, digest)
) WITHOUT ROWID;
