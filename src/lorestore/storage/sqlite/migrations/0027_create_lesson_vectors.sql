-- 0027_create_lesson_vectors.sql
--
-- Why: hybrid retrieval (issue 21). Recall fuses the full-text rank with the cosine similarity
--   of a small local embedding model (the optional extra lorestore[semantic]), so a task
--   phrased in other words than a lesson still finds it. The vectors are kept in the store,
--   beside the lessons they were made from, so they are computed once per version, not per
--   recall, and every process that opens the file shares them.
-- What changes: lesson_vectors, one row per lesson (the served version's tags and
--   text): the owner, the lesson's pk (ON DELETE CASCADE: a hard delete erases the vector
--   with the text it was made from), its id (what recall names a candidate by: a rung's
--   vectors are read without touching the lessons' rows, whose pages hold their text), its
--   scope (recall reads a rung's vectors by owner and scope), the model's name and version (a model change is seen and re-embedded by
--   `lorestore reindex`), the vector (256 int8 components: 256 bytes) and a generation: the
--   AUTOINCREMENT key, so a replaced vector gets a number never used before and a process
--   that caches a rung's vectors reads only those with a generation at or above its mark.
-- Tenancy: a tenant table keyed on (owner, lesson_pk), whose owner cannot change (a trigger,
--   as migration 0018 keeps the others); SQLite has no row-level security,
--   the service's owner filters are the boundary (as for lessons).
-- Compatibility: the previous release never reads the table; a lesson it writes has no
--   vector until the next write of it or `lorestore reindex`, and recall finds it by its words
--   meanwhile.
-- Verify: after a write with the extra installed, `SELECT owner, scope, model,
--   length(vector) FROM lesson_vectors` shows the lesson's row with 256 bytes.

CREATE TABLE lesson_vectors (
    generation    INTEGER PRIMARY KEY AUTOINCREMENT,
    owner         TEXT NOT NULL,
    lesson_pk     INTEGER NOT NULL REFERENCES lessons (pk) ON DELETE CASCADE,
    lesson_id     TEXT NOT NULL,
    scope         TEXT NOT NULL,
    model         TEXT NOT NULL,
    model_version TEXT NOT NULL,
    vector        BLOB NOT NULL
);

CREATE UNIQUE INDEX lesson_vectors_lesson ON lesson_vectors (owner, lesson_pk);
CREATE INDEX lesson_vectors_rung ON lesson_vectors (owner, scope, generation);
-- ON DELETE CASCADE looks the lesson's vector up by lesson_pk alone.
CREATE INDEX lesson_vectors_pk ON lesson_vectors (lesson_pk);

-- A row stays in its tenant (as migration 0018 keeps every other tenant table's).
CREATE TRIGGER lesson_vectors_keys_frozen BEFORE UPDATE OF owner ON lesson_vectors
    WHEN old.owner IS NOT new.owner BEGIN
    SELECT RAISE(ABORT, 'owner of lesson_vectors is immutable: a row stays in its tenant');
END;
