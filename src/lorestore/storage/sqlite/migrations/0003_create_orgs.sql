-- 0003_create_orgs.sql
--
-- Why: the same organisations, memberships, invites and scope bindings as the PostgreSQL
--   backend, for a team sharing one machine; and the per-owner cap on active lessons kept
--   with a counter row, so a write costs the same at 100 lessons or 100,000.
-- What changes: creates memberships, invites, scope_bindings, owner_stats and the triggers
--   that keep owner_stats.active_lessons and refuse a write beyond max_active.
-- Tenancy: every query of the service filters by owner; there is no row-level security in
--   SQLite, so on the embedded store the service is the boundary (one machine, one trust
--   domain). Principals other than user:local are created when they first act.
-- Compatibility: additive; existing lessons are counted into owner_stats here.
-- Verify: `SELECT * FROM owner_stats` shows one row per owner with its active count.

CREATE TABLE memberships (
    org         TEXT NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    member      TEXT NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    role        TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    created_at  TEXT NOT NULL,
    PRIMARY KEY (org, member)
);

CREATE INDEX memberships_member ON memberships (member);

CREATE TABLE invites (
    id            TEXT PRIMARY KEY,
    org           TEXT NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    invitee       TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    code_hash     TEXT NOT NULL UNIQUE,
    created_by    TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    expires_at    TEXT NOT NULL,
    accepted_at   TEXT
);

CREATE TABLE scope_bindings (
    org           TEXT NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    pattern       TEXT NOT NULL UNIQUE,
    created_by    TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    PRIMARY KEY (org, pattern)
);

CREATE TABLE owner_stats (
    owner           TEXT PRIMARY KEY,
    active_lessons  INTEGER NOT NULL DEFAULT 0,
    max_active      INTEGER NOT NULL DEFAULT 10000 CHECK (max_active >= 0)
);

INSERT INTO owner_stats (owner, active_lessons)
SELECT owner, count(*) FROM lessons WHERE status = 'active' GROUP BY owner;

CREATE TRIGGER owner_stats_insert AFTER INSERT ON lessons WHEN new.status = 'active' BEGIN
    INSERT INTO owner_stats (owner, active_lessons) VALUES (new.owner, 1)
    ON CONFLICT (owner) DO UPDATE SET active_lessons = active_lessons + 1;
    SELECT RAISE(ABORT, 'cap_exceeded')
    WHERE (SELECT active_lessons > max_active FROM owner_stats WHERE owner = new.owner);
END;

CREATE TRIGGER owner_stats_delete AFTER DELETE ON lessons WHEN old.status = 'active' BEGIN
    UPDATE owner_stats SET active_lessons = active_lessons - 1 WHERE owner = old.owner;
END;

CREATE TRIGGER owner_stats_archive AFTER UPDATE OF status ON lessons
    WHEN old.status = 'active' AND new.status = 'archived' BEGIN
    UPDATE owner_stats SET active_lessons = active_lessons - 1 WHERE owner = old.owner;
END;

CREATE TRIGGER owner_stats_restore AFTER UPDATE OF status ON lessons
    WHEN old.status = 'archived' AND new.status = 'active' BEGIN
    INSERT INTO owner_stats (owner, active_lessons) VALUES (new.owner, 1)
    ON CONFLICT (owner) DO UPDATE SET active_lessons = active_lessons + 1;
    SELECT RAISE(ABORT, 'cap_exceeded')
    WHERE (SELECT active_lessons > max_active FROM owner_stats WHERE owner = new.owner);
END;
