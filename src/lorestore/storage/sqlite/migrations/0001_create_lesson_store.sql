-- 0001_create_lesson_store.sql
--
-- Why: lorestore's first schema. The seven mechanisms of a correctable memory (versions,
--   tombstones, trust, bi-temporal validity, scope, audit, review) each get their column or
--   table now, even where a later release fills in the behaviour, because retrofitting
--   history onto an overwrite store loses exactly the history it was meant to keep.
-- What changes: creates principals, lessons (+ FTS5 index and its sync triggers),
--   lesson_versions (immutable), lesson_sessions (distinct sessions per value, for
--   recurrence), tombstones, audit_log (append-only, hash-chained per owner), recall_log
--   and scope_policies.
-- Tenancy: every tenant table keys on `owner` first ('user:<id>' or 'org:<slug>'). The
--   embedded store has one local user; the service filters every read by the actor's owner.
-- Compatibility: first migration; nothing deployed depends on an earlier shape.
-- Verify: `SELECT * FROM schema_migrations` shows 0001 with its checksum;
--   `UPDATE audit_log SET action = 'x'` fails with "audit_log is append-only".

CREATE TABLE principals (
    id          TEXT PRIMARY KEY,            -- 'user:<id>' or 'org:<slug>'
    kind        TEXT NOT NULL CHECK (kind IN ('user', 'org')),
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

INSERT INTO principals (id, kind, name, created_at)
VALUES ('user:local', 'user', 'local', strftime('%Y-%m-%dT%H:%M:%f000Z', 'now'));

-- One row per address: the version currently served. `value` duplicates the accepted
-- version's text so reads and the full-text index need no join.
CREATE TABLE lessons (
    pk            INTEGER PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    owner         TEXT NOT NULL REFERENCES principals (id),
    scope         TEXT NOT NULL,
    key           TEXT NOT NULL,
    value         TEXT NOT NULL,
    value_digest  TEXT NOT NULL,
    tags          TEXT NOT NULL DEFAULT '[]',     -- JSON array, sorted
    kind          TEXT NOT NULL DEFAULT 'lesson' CHECK (kind IN ('lesson', 'signal', 'bus')),
    trust         TEXT NOT NULL DEFAULT 'candidate'
                  CHECK (trust IN ('candidate', 'corroborated', 'verified', 'disputed', 'rejected')),
    status        TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
    version       INTEGER NOT NULL CHECK (version >= 1),
    seen_count    INTEGER NOT NULL DEFAULT 1 CHECK (seen_count >= 0),
    valid_from    TEXT,
    valid_to      TEXT,
    recorded_at   TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    archived_at   TEXT,
    expires_at    TEXT,
    source        TEXT NOT NULL DEFAULT '{}',     -- JSON object, DESIGN §3 `source`
    depends_on    TEXT NOT NULL DEFAULT '[]',     -- JSON array of {path, blob}
    review        TEXT,                           -- JSON {by, at, note} of the last adjudication
    ext           TEXT NOT NULL DEFAULT '{}',     -- unknown imported fields, kept verbatim
    pending_version INTEGER,                      -- a proposed revision awaiting review
    CHECK (valid_to IS NULL OR valid_from IS NULL OR valid_from <= valid_to)
);

-- The address is unique per owner and stays taken while archived (archive never frees it).
CREATE UNIQUE INDEX lessons_address ON lessons (owner, scope, key);
-- Newest-first listing of a scope's active lessons (keyset on updated_at, pk).
CREATE INDEX lessons_listing ON lessons (owner, scope, status, updated_at DESC, pk DESC);
-- The two purge sweeps read different predicates; each gets its own partial index.
CREATE INDEX lessons_expiring ON lessons (owner, expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX lessons_archived ON lessons (owner, archived_at) WHERE status = 'archived';
-- Copies of a value across scopes, found when a reviewer rejects it.
CREATE INDEX lessons_digest ON lessons (owner, value_digest);
-- The review queue: what awaits a person's decision.
CREATE INDEX lessons_review ON lessons (owner, trust, updated_at)
    WHERE trust IN ('disputed', 'corroborated') OR pending_version IS NOT NULL;

CREATE VIRTUAL TABLE lessons_fts USING fts5 (
    key, value, tags,
    content = 'lessons', content_rowid = 'pk',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER lessons_fts_insert AFTER INSERT ON lessons BEGIN
    INSERT INTO lessons_fts (rowid, key, value, tags) VALUES (new.pk, new.key, new.value, new.tags);
END;

CREATE TRIGGER lessons_fts_delete AFTER DELETE ON lessons BEGIN
    INSERT INTO lessons_fts (lessons_fts, rowid, key, value, tags)
    VALUES ('delete', old.pk, old.key, old.value, old.tags);
END;

-- Only a change of the indexed text touches the index; seen_count and status bumps do not.
CREATE TRIGGER lessons_fts_update AFTER UPDATE OF key, value, tags ON lessons BEGIN
    INSERT INTO lessons_fts (lessons_fts, rowid, key, value, tags)
    VALUES ('delete', old.pk, old.key, old.value, old.tags);
    INSERT INTO lessons_fts (rowid, key, value, tags) VALUES (new.pk, new.key, new.value, new.tags);
END;

-- Every value a lesson has held, never rewritten. `state` is 'accepted' for served history,
-- 'proposed' for a revision of a verified lesson awaiting review, 'superseded' for a
-- proposal replaced by a newer one, 'rejected' once refused. `accepted_at` is when a
-- reviewed proposal started being served (NULL: served from `recorded_at`), so `as_of`
-- answers what the store said at the time. Only a hard delete removes rows.
CREATE TABLE lesson_versions (
    lesson_pk     INTEGER NOT NULL REFERENCES lessons (pk) ON DELETE CASCADE,
    version       INTEGER NOT NULL,
    state         TEXT NOT NULL DEFAULT 'accepted'
                  CHECK (state IN ('accepted', 'proposed', 'superseded', 'rejected')),
    value         TEXT NOT NULL,
    value_digest  TEXT NOT NULL,
    tags          TEXT NOT NULL DEFAULT '[]',
    valid_from    TEXT,
    valid_to      TEXT,
    recorded_at   TEXT NOT NULL,
    accepted_at   TEXT,
    actor         TEXT NOT NULL,
    source        TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (lesson_pk, version)
) WITHOUT ROWID;

CREATE INDEX lesson_versions_as_of ON lesson_versions (lesson_pk, recorded_at);

-- A version's content is immutable; only its review state (and when it was accepted) may
-- move, which is how a proposed revision is adjudicated.
CREATE TRIGGER lesson_versions_immutable BEFORE UPDATE OF lesson_pk, version, value, value_digest,
    tags, valid_from, valid_to, recorded_at, actor, source ON lesson_versions
BEGIN
    SELECT RAISE(ABORT, 'lesson_versions are immutable');
END;

-- Distinct sessions that wrote a given value at an address; seen_count counts these rows,
-- kept as a counter on lessons so that a write costs O(1).
CREATE TABLE lesson_sessions (
    lesson_pk     INTEGER NOT NULL REFERENCES lessons (pk) ON DELETE CASCADE,
    value_digest  TEXT NOT NULL,
    session       TEXT NOT NULL,
    first_seen    TEXT NOT NULL,
    PRIMARY KEY (lesson_pk, value_digest, session)
) WITHOUT ROWID;

-- A rejected value, keyed on the digest of its normalised form (never the text), for a
-- scope and every narrower one. A lifted tombstone keeps its row with lifted_* set.
CREATE TABLE tombstones (
    id            TEXT PRIMARY KEY,
    owner         TEXT NOT NULL REFERENCES principals (id),
    scope         TEXT NOT NULL,
    value_digest  TEXT NOT NULL,
    reason        TEXT NOT NULL,
    actor         TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    lesson_id     TEXT,
    lifted_at     TEXT,
    lifted_by     TEXT,
    lift_reason   TEXT
);

CREATE INDEX tombstones_lookup ON tombstones (owner, value_digest, scope) WHERE lifted_at IS NULL;

-- Append-only record of every mutation. Values never appear, only digests. Each owner's
-- events form a hash chain: hash = sha256(prev_hash || canonical event).
CREATE TABLE audit_log (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    owner           TEXT NOT NULL,
    at              TEXT NOT NULL,
    actor           TEXT NOT NULL,
    action          TEXT NOT NULL,
    scope           TEXT,
    key             TEXT,
    lesson_id       TEXT,
    before_version  INTEGER,
    after_version   INTEGER,
    before_digest   TEXT,
    after_digest    TEXT,
    reason          TEXT,
    detail          TEXT NOT NULL DEFAULT '{}',
    prev_hash       TEXT NOT NULL,
    hash            TEXT NOT NULL
);

CREATE INDEX audit_log_owner ON audit_log (owner, id);
CREATE INDEX audit_log_address ON audit_log (owner, scope, key, id);

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;

-- Why each lesson did or did not reach a task (memory_recall / memory_explain). Has its own
-- retention, separate from lessons and audit.
CREATE TABLE recall_log (
    recall_id     TEXT PRIMARY KEY,
    owner         TEXT NOT NULL,
    at            TEXT NOT NULL,
    actor         TEXT NOT NULL,
    context       TEXT NOT NULL,      -- JSON: repo, branch, revision, cwd, task, budget
    offered       TEXT NOT NULL,      -- JSON: [{lesson_id, version, reasons}]
    held          TEXT NOT NULL       -- JSON: [{lesson_id, version, reasons}]
);

CREATE INDEX recall_log_age ON recall_log (owner, at);

-- Per-scope revision and review policy for recall eligibility.
CREATE TABLE scope_policies (
    owner           TEXT NOT NULL REFERENCES principals (id),
    scope           TEXT NOT NULL,
    revision_policy TEXT NOT NULL DEFAULT 'none' CHECK (revision_policy IN ('none', 'commit', 'files')),
    require_review  INTEGER NOT NULL DEFAULT 0 CHECK (require_review IN (0, 1)),
    updated_at      TEXT NOT NULL,
    updated_by      TEXT NOT NULL,
    PRIMARY KEY (owner, scope)
);
