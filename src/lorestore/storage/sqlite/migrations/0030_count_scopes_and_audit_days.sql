-- 0030_count_scopes_and_audit_days.sql
--
-- Why: the dashboard's overview and its search under a prefix call memory_scopes, whose
--   per-scope counts read an index entry per lesson of every readable owner (60-110 ms at
--   100k lessons, migration 0029's covering index included); the overview's chart counted a
--   month of audit events from their index (40 ms at 100k events). Both grow with the store.
-- What changes: two tables of counters kept by triggers in the transaction of every change,
--   and backfilled here from the rows. scope_tallies holds, per (owner, scope), the lessons
--   archived, and the active ones by trust (rejected included): each lesson in exactly one
--   column, so a scope's row goes when its last lesson does. Expiry depends on the time, so
--   it is not counted here: scope_counts subtracts the expired lessons it finds through
--   lessons_expiring (those not yet purged by the sweep). audit_day_counts holds, per
--   (owner, UTC day, action), the audit events appended; the audit log is append-only, so
--   only inserts count. The triggers fire on INSERT and DELETE, and on an UPDATE only of
--   owner, scope, status or trust that changes one of them (a seen count or a new value does
--   not touch the counters).
-- Tenancy: none; the service filters by owner (no row-level security in SQLite). Both tables
--   lead with owner.
-- Compatibility: code of the previous release neither reads nor writes these tables; its
--   writes keep them current through the triggers, so moving back and forth is safe.
--   Each lesson insert, delete or state change does one more upsert, each audit append one.
-- Verify: scope_counts returns what the GROUP BY over lessons of 0029 returned;
--   `SELECT sum(archived + rejected + candidate + corroborated + verified + disputed) FROM
--   scope_tallies` equals `SELECT count(*) FROM lessons`; `SELECT sum(events) FROM
--   audit_day_counts` equals `SELECT count(*) FROM audit_log`.

CREATE TABLE scope_tallies (
    owner         TEXT NOT NULL,
    scope         TEXT NOT NULL,
    archived      INTEGER NOT NULL DEFAULT 0 CHECK (archived >= 0),
    rejected      INTEGER NOT NULL DEFAULT 0 CHECK (rejected >= 0),
    candidate     INTEGER NOT NULL DEFAULT 0 CHECK (candidate >= 0),
    corroborated  INTEGER NOT NULL DEFAULT 0 CHECK (corroborated >= 0),
    verified      INTEGER NOT NULL DEFAULT 0 CHECK (verified >= 0),
    disputed      INTEGER NOT NULL DEFAULT 0 CHECK (disputed >= 0),
    PRIMARY KEY (owner, scope)
) WITHOUT ROWID;

INSERT INTO scope_tallies (owner, scope, archived, rejected, candidate, corroborated, verified,
                           disputed)
SELECT owner, scope, sum(status = 'archived'), sum(status = 'active' AND trust = 'rejected'),
       sum(status = 'active' AND trust = 'candidate'),
       sum(status = 'active' AND trust = 'corroborated'),
       sum(status = 'active' AND trust = 'verified'),
       sum(status = 'active' AND trust = 'disputed')
FROM lessons GROUP BY owner, scope;

CREATE TRIGGER scope_tallies_insert AFTER INSERT ON lessons BEGIN
    INSERT INTO scope_tallies (owner, scope, archived, rejected, candidate, corroborated,
                               verified, disputed)
    VALUES (new.owner, new.scope, new.status = 'archived',
            new.status = 'active' AND new.trust = 'rejected',
            new.status = 'active' AND new.trust = 'candidate',
            new.status = 'active' AND new.trust = 'corroborated',
            new.status = 'active' AND new.trust = 'verified',
            new.status = 'active' AND new.trust = 'disputed')
    ON CONFLICT (owner, scope) DO UPDATE SET
        archived = archived + excluded.archived,
        rejected = rejected + excluded.rejected,
        candidate = candidate + excluded.candidate,
        corroborated = corroborated + excluded.corroborated,
        verified = verified + excluded.verified,
        disputed = disputed + excluded.disputed;
END;

-- The old row's column out (and the scope's row with it when that was its last lesson), the
-- new row's in.
CREATE TRIGGER scope_tallies_update AFTER UPDATE OF owner, scope, status, trust ON lessons
WHEN old.owner <> new.owner OR old.scope <> new.scope OR old.status <> new.status
     OR old.trust <> new.trust
BEGIN
    UPDATE scope_tallies SET
        archived = archived - (old.status = 'archived'),
        rejected = rejected - (old.status = 'active' AND old.trust = 'rejected'),
        candidate = candidate - (old.status = 'active' AND old.trust = 'candidate'),
        corroborated = corroborated - (old.status = 'active' AND old.trust = 'corroborated'),
        verified = verified - (old.status = 'active' AND old.trust = 'verified'),
        disputed = disputed - (old.status = 'active' AND old.trust = 'disputed')
    WHERE owner = old.owner AND scope = old.scope;
    DELETE FROM scope_tallies
    WHERE owner = old.owner AND scope = old.scope
      AND archived + rejected + candidate + corroborated + verified + disputed = 0;
    INSERT INTO scope_tallies (owner, scope, archived, rejected, candidate, corroborated,
                               verified, disputed)
    VALUES (new.owner, new.scope, new.status = 'archived',
            new.status = 'active' AND new.trust = 'rejected',
            new.status = 'active' AND new.trust = 'candidate',
            new.status = 'active' AND new.trust = 'corroborated',
            new.status = 'active' AND new.trust = 'verified',
            new.status = 'active' AND new.trust = 'disputed')
    ON CONFLICT (owner, scope) DO UPDATE SET
        archived = archived + excluded.archived,
        rejected = rejected + excluded.rejected,
        candidate = candidate + excluded.candidate,
        corroborated = corroborated + excluded.corroborated,
        verified = verified + excluded.verified,
        disputed = disputed + excluded.disputed;
END;

CREATE TRIGGER scope_tallies_delete AFTER DELETE ON lessons BEGIN
    UPDATE scope_tallies SET
        archived = archived - (old.status = 'archived'),
        rejected = rejected - (old.status = 'active' AND old.trust = 'rejected'),
        candidate = candidate - (old.status = 'active' AND old.trust = 'candidate'),
        corroborated = corroborated - (old.status = 'active' AND old.trust = 'corroborated'),
        verified = verified - (old.status = 'active' AND old.trust = 'verified'),
        disputed = disputed - (old.status = 'active' AND old.trust = 'disputed')
    WHERE owner = old.owner AND scope = old.scope;
    DELETE FROM scope_tallies
    WHERE owner = old.owner AND scope = old.scope
      AND archived + rejected + candidate + corroborated + verified + disputed = 0;
END;

CREATE TABLE audit_day_counts (
    owner   TEXT NOT NULL,
    day     TEXT NOT NULL,      -- YYYY-MM-DD, UTC
    action  TEXT NOT NULL,
    events  INTEGER NOT NULL CHECK (events >= 0),
    PRIMARY KEY (owner, day, action)
) WITHOUT ROWID;

INSERT INTO audit_day_counts (owner, day, action, events)
SELECT owner, substr(at, 1, 10), action, count(*) FROM audit_log
GROUP BY owner, substr(at, 1, 10), action;

CREATE TRIGGER audit_day_counts_insert AFTER INSERT ON audit_log BEGIN
    INSERT INTO audit_day_counts (owner, day, action, events)
    VALUES (new.owner, substr(new.at, 1, 10), new.action, 1)
    ON CONFLICT (owner, day, action) DO UPDATE SET events = events + 1;
END;
