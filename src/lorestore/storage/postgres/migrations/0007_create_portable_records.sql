-- 0007_create_portable_records.sql
--
-- Why: `lorestore import` keeps what it does not understand (DESIGN §3 `ext`). Lessons have
--   had `ext` since 0001, but tombstones and scope policies had nowhere to keep the unknown
--   fields of an imported record, and a line whose `type` this version does not know (one
--   written by a newer lorestore or another tool) had nowhere at all. Dropping them would
--   break the promise that a file imported and exported again comes back whole; refusing
--   them would make a newer file unreadable by an older lorestore. docs/format.md.
-- What changes: `tombstones.ext` and `scope_policies.ext` (jsonb, default '{}'; a constant
--   default, so no table rewrite); a table `foreign_records`: one row per imported record of
--   an unknown type, keyed on (owner, SHA-256 of its canonical JSON) so that importing it
--   twice keeps one row, holding the record as given, its type, the scope it named (if it
--   named a valid one) and who imported it when. Nothing reads a foreign record except
--   `lorestore export`, which writes it back out; no recall, search or list serves one.
-- Tenancy: `foreign_records` keys on `owner` first, with row-level security enabled and
--   forced like every tenant table: readable by the owners the actor may read, insertable
--   only into owners it may write and only as itself (`imported_by = lorestore_actor()`).
--   The app role may SELECT and INSERT; no UPDATE (a kept record never changes) and no
--   DELETE grant. The new ext columns inherit their tables' policies and grants.
-- Compatibility: additive. Code that predates it never reads the new columns or table, and
--   the column defaults keep its inserts valid.
-- Verify: as lorestore_app with lorestore.actor unset, `SELECT count(*) FROM foreign_records`
--   is 0; `\d tombstones` lists ext; importing `{"type": "note", "text": "x"}` twice leaves
--   one row.

ALTER TABLE tombstones ADD COLUMN ext jsonb NOT NULL DEFAULT '{}';

ALTER TABLE scope_policies ADD COLUMN ext jsonb NOT NULL DEFAULT '{}';

CREATE TABLE foreign_records (
    owner         text NOT NULL REFERENCES principals (id),
    digest        text NOT NULL,
    type          text NOT NULL,
    scope         text,
    record        jsonb NOT NULL,
    imported_at   timestamptz NOT NULL,
    imported_by   text NOT NULL,
    PRIMARY KEY (owner, digest)
);

ALTER TABLE foreign_records ENABLE ROW LEVEL SECURITY;
ALTER TABLE foreign_records FORCE ROW LEVEL SECURITY;

CREATE POLICY foreign_read ON foreign_records FOR SELECT
    USING (owner = ANY ((SELECT lorestore_owners())::text[]));
CREATE POLICY foreign_insert ON foreign_records FOR INSERT
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[])
                AND imported_by = lorestore_actor());

GRANT SELECT, INSERT ON foreign_records TO lorestore_app;
