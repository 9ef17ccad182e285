-- name: lesson_docs
-- Each lesson with its record as JSON built by SQLite, which pydantic validates without
-- Python in between: the read paths' hot loop (a temporary view, defined per connection).
-- json() re-parses a column, so the usual empty values are written without it, and
-- pending_revision is 0 or 1 (which pydantic reads as a bool). Most lessons have no
-- validity window, expiry, archive time, review, dependencies, extension fields or pending
-- proposal and are of kind 'lesson': their record leaves those fields out, and the model's
-- defaults (the same values) fill them, which is cheaper to build and to validate.
CREATE TEMP VIEW IF NOT EXISTS lesson_docs AS
SELECT pk, owner, scope, key, status, trust, tags, updated_at, expires_at, value_digest,
    pending_version, seen_count,
    CASE WHEN valid_from IS NULL AND valid_to IS NULL AND archived_at IS NULL
              AND expires_at IS NULL AND review IS NULL AND depends_on = '[]' AND ext = '{}'
              AND pending_version IS NULL AND kind = 'lesson'
    THEN json_object(
        'id', id, 'scope', scope, 'key', key, 'value', value, 'tags', json(tags),
        'owner', json_object(substr(owner, 1, instr(owner, ':') - 1),
                             substr(owner, instr(owner, ':') + 1)),
        'trust', trust, 'status', status, 'version', version, 'seen_count', seen_count,
        'recorded_at', recorded_at, 'created_at', created_at, 'updated_at', updated_at,
        'source', json(source)
    )
    ELSE json_object(
        'id', id, 'scope', scope, 'key', key, 'value', value, 'tags', json(tags),
        'kind', kind,
        'owner', json_object(substr(owner, 1, instr(owner, ':') - 1),
                             substr(owner, instr(owner, ':') + 1)),
        'trust', trust, 'status', status, 'version', version, 'seen_count', seen_count,
        'valid_from', valid_from, 'valid_to', valid_to, 'recorded_at', recorded_at,
        'created_at', created_at, 'updated_at', updated_at, 'archived_at', archived_at,
        'expires_at', expires_at, 'source', json(source),
        'depends_on', CASE depends_on WHEN '[]' THEN json_array() ELSE json(depends_on) END,
        'review', json(review),
        'ext', CASE ext WHEN '{}' THEN json_object() ELSE json(ext) END,
        'pending_revision', pending_version IS NOT NULL
    ) END AS doc
FROM lessons;

-- name: lesson_at
-- The lesson at an address, archived or not.
SELECT pk, value_digest, pending_version, doc FROM lesson_docs
WHERE owner = :owner AND scope = :scope AND key = :key;

-- name: lessons_with_keys
-- The lessons at one scope of an owner holding any of the given keys, archived or not (an
-- agent's search: the narrower lessons that may shadow what it found).
SELECT pk, value_digest, pending_version, doc FROM lesson_docs
WHERE owner = :owner AND scope = :scope AND key IN (SELECT value FROM json_each(:keys));

-- name: insert_lesson
-- Create the served row of a new address.
INSERT INTO lessons (id, owner, scope, key, value, value_digest, tags, kind, trust, status,
    version, seen_count, valid_from, valid_to, recorded_at, created_at, updated_at,
    archived_at, expires_at, source, depends_on, review, ext, pending_version)
VALUES (:id, :owner, :scope, :key, :value, :value_digest, :tags, :kind, :trust, :status,
    :version, :seen_count, :valid_from, :valid_to, :recorded_at, :created_at, :updated_at,
    :archived_at, :expires_at, :source, :depends_on, :review, :ext, :pending_version);

-- name: save_lesson
-- Overwrite the served row of an address; its versions live in lesson_versions.
UPDATE lessons SET value = :value, value_digest = :value_digest, tags = :tags, kind = :kind,
    trust = :trust, status = :status, version = :version, seen_count = :seen_count,
    valid_from = :valid_from, valid_to = :valid_to, recorded_at = :recorded_at,
    updated_at = :updated_at, archived_at = :archived_at, expires_at = :expires_at,
    source = :source, depends_on = :depends_on, review = :review, ext = :ext,
    pending_version = :pending_version
WHERE pk = :pk;

-- name: delete_lesson
-- Hard delete: the row, and by cascade every version and session of it.
DELETE FROM lessons WHERE pk = :pk;

-- name: compact_search_index
-- Merge the full-text index into one segment so deleted text leaves no tokens behind.
INSERT INTO lessons_fts (lessons_fts) VALUES ('optimize');

-- name: insert_versions
-- Record one immutable version of a lesson (run once per version of a batch).
INSERT INTO lesson_versions (lesson_pk, version, state, value, value_digest, tags,
    valid_from, valid_to, recorded_at, accepted_at, actor, source)
VALUES (:lesson_pk, :version, :state, :value, :value_digest, :tags,
    :valid_from, :valid_to, :recorded_at, :accepted_at, :actor, :source);

-- name: versions
-- Every version of a lesson, oldest first.
SELECT * FROM lesson_versions WHERE lesson_pk = :pk ORDER BY version;

-- name: version
-- One version of a lesson by number.
SELECT * FROM lesson_versions WHERE lesson_pk = :pk AND version = :number;

-- name: max_version
-- The highest version number a lesson has used, proposals included.
SELECT max(version) AS n FROM lesson_versions WHERE lesson_pk = :pk;

-- name: set_version_state
-- Move a version's review state; the immutability trigger guards its content.
UPDATE lesson_versions SET state = :state, accepted_at = coalesce(:accepted_at, accepted_at)
WHERE lesson_pk = :pk AND version = :number;

-- name: version_at
-- The newest accepted version served at record time :as_of that holds at world time :valid_at.
SELECT * FROM lesson_versions
WHERE lesson_pk = :pk AND state = 'accepted'
  AND (:as_of IS NULL OR coalesce(accepted_at, recorded_at) <= :as_of)
  AND (:valid_at IS NULL OR ((valid_from IS NULL OR valid_from <= :valid_at)
                             AND (valid_to IS NULL OR :valid_at < valid_to)))
ORDER BY coalesce(accepted_at, recorded_at) DESC, version DESC LIMIT 1;

-- name: trust_events
-- A lesson's audit events up to a time, newest first, with the trust each recorded.
SELECT action, json_extract(detail, '$.trust') AS trust FROM audit_log
WHERE owner = :owner AND scope = :scope AND key = :key AND lesson_id = :lesson_id
  AND at <= :at
ORDER BY id DESC LIMIT 100;

-- name: add_session
-- Remember that a session wrote this value; ignored when it already did.
INSERT OR IGNORE INTO lesson_sessions (lesson_pk, value_digest, session, first_seen)
VALUES (:pk, :value_digest, :session, :at);

-- name: clear_sessions
-- Forget the sessions of every earlier value when a new version starts.
DELETE FROM lesson_sessions WHERE lesson_pk = :pk;

-- name: insert_tombstone
-- Record a rejected value for a scope.
INSERT INTO tombstones (id, owner, scope, value_digest, reason, actor, created_at, lesson_id)
VALUES (:id, :owner, :scope, :value_digest, :reason, :actor, :created_at, :lesson_id);

-- name: lift_tombstones
-- Lift the live tombstones of a value at one scope (only those one lesson left, given its id).
UPDATE tombstones SET lifted_at = :at, lifted_by = :lifted_by, lift_reason = :reason
WHERE owner = :owner AND scope = :scope AND value_digest = :value_digest AND lifted_at IS NULL
  AND (:lesson_id IS NULL OR lesson_id = :lesson_id);

-- name: lessons_with_digest
-- Lessons of an owner serving a value with this digest, in any scope, archived ones too (a
-- rejection reaches the copies a restore would bring back).
SELECT * FROM lessons
WHERE owner = :owner AND value_digest = :value_digest;

-- name: review_queue
-- What awaits a person: disputes, proposed revisions, corroborated and recurring candidates,
-- and unreviewed lessons by outside authors; most urgent first. Each reason is read on its
-- own, newest first, from the index holding only its lessons (migration 0029) and up to the
-- limit, so a page never reads every candidate; the branches are disjoint (a lesson counts
-- under its most urgent reason) and the merge keeps the order of one query over all.
-- INDEXED BY: without statistics the planner prefers (owner, status) and reads every lesson.
SELECT * FROM (
    SELECT * FROM (
        SELECT l.*, 'disputed' AS queue_reason, 0 AS queue_rank
        FROM lessons AS l INDEXED BY lessons_by_trust
        WHERE l.owner IN (SELECT value FROM json_each(:owners))
          AND l.trust = 'disputed' AND l.status = 'active'
          AND (:scope IS NULL OR l.scope = :scope)
          AND (l.expires_at IS NULL OR l.expires_at > :now)
        ORDER BY l.updated_at DESC, l.pk DESC LIMIT :limit)
    UNION ALL
    SELECT * FROM (
        SELECT l.*, 'revision', 1
        FROM lessons AS l INDEXED BY lessons_revisions
        WHERE l.owner IN (SELECT value FROM json_each(:owners))
          AND l.pending_version IS NOT NULL AND l.status = 'active'
          AND l.trust NOT IN ('rejected', 'disputed')
          AND (:scope IS NULL OR l.scope = :scope)
          AND (l.expires_at IS NULL OR l.expires_at > :now)
        ORDER BY l.updated_at DESC, l.pk DESC LIMIT :limit)
    UNION ALL
    SELECT * FROM (
        SELECT l.*, 'corroborated', 2
        FROM lessons AS l INDEXED BY lessons_by_trust
        WHERE l.owner IN (SELECT value FROM json_each(:owners))
          AND l.trust = 'corroborated' AND l.pending_version IS NULL AND l.status = 'active'
          AND (:scope IS NULL OR l.scope = :scope)
          AND (l.expires_at IS NULL OR l.expires_at > :now)
        ORDER BY l.updated_at DESC, l.pk DESC LIMIT :limit)
    UNION ALL
    SELECT * FROM (
        SELECT l.*, 'recurring', 3
        FROM lessons AS l INDEXED BY lessons_recurring
        WHERE l.owner IN (SELECT value FROM json_each(:owners))
          AND l.trust = 'candidate' AND l.seen_count >= 2
          AND l.pending_version IS NULL AND l.status = 'active'
          AND (:scope IS NULL OR l.scope = :scope)
          AND (l.expires_at IS NULL OR l.expires_at > :now)
        ORDER BY l.updated_at DESC, l.pk DESC LIMIT :limit)
    UNION ALL
    SELECT * FROM (
        SELECT l.*, 'outside_author', 4
        FROM lessons AS l INDEXED BY lessons_outside_author
        WHERE l.owner IN (SELECT value FROM json_each(:owners))
          AND json_extract(l.source, '$.author_association') IS NOT NULL
          AND upper(json_extract(l.source, '$.author_association'))
              NOT IN ('OWNER', 'MEMBER', 'COLLABORATOR')
          AND l.trust = 'candidate' AND l.seen_count < 2
          AND l.pending_version IS NULL AND l.status = 'active'
          AND (:scope IS NULL OR l.scope = :scope)
          AND (l.expires_at IS NULL OR l.expires_at > :now)
        ORDER BY l.updated_at DESC, l.pk DESC LIMIT :limit)
)
ORDER BY queue_rank, updated_at DESC, pk DESC
LIMIT :limit;

-- name: list_lessons
-- Active, unexpired lessons of a scope, newest first, after a keyset cursor.
SELECT pk, value_digest, pending_version, doc FROM lesson_docs
WHERE owner = :owner AND scope = :scope AND status = 'active' AND trust != 'rejected'
  AND (expires_at IS NULL OR expires_at > :now)
  AND (:after_at IS NULL OR updated_at < :after_at OR (updated_at = :after_at AND pk < :after_pk))
  AND (:ntags = 0 OR (SELECT count(*) FROM json_each(lesson_docs.tags) AS t
                      WHERE t.value IN (SELECT value FROM json_each(:tags))) = :ntags)
ORDER BY updated_at DESC, pk DESC
LIMIT :limit;

-- name: browse_by_updated
-- Lessons of some owners at a scope or under a scope prefix, in one state, optionally of one
-- trust (never rejected), newest first, after a keyset cursor (memory_list's filters).
-- The page is found in the index that holds its order (migration 0029), the walk stopping at
-- the limit, and only its lessons are built as records; INDEXED BY because without
-- statistics the planner takes the other (owner, status) index and sorts every lesson.
-- status = ... repeats the state's status so that the index can seek on it.
SELECT pk, value_digest, pending_version, doc FROM lesson_docs
WHERE pk IN (SELECT pk FROM lessons INDEXED BY lessons_browse_updated
WHERE owner IN (SELECT value FROM json_each(:owners))
  AND (:scope IS NULL OR scope = :scope)
  AND (:prefix IS NULL OR substr(scope, 1, length(:prefix)) = :prefix)
  AND trust != 'rejected' AND (:trust IS NULL OR trust = :trust)
  AND status = CASE :state WHEN 'archived' THEN 'archived' ELSE 'active' END
  AND CASE :state
        WHEN 'archived' THEN status = 'archived'
        WHEN 'expired' THEN status = 'active' AND expires_at IS NOT NULL AND expires_at <= :now
        ELSE status = 'active' AND (expires_at IS NULL OR expires_at > :now) END
  AND (:ntags = 0 OR (SELECT count(*) FROM json_each(lessons.tags) AS t
                      WHERE t.value IN (SELECT value FROM json_each(:tags))) = :ntags)
  AND (:after_at IS NULL OR updated_at < :after_at OR (updated_at = :after_at AND pk < :after_pk))
ORDER BY updated_at DESC, pk DESC
LIMIT :limit)
ORDER BY updated_at DESC, pk DESC;

-- name: browse_by_trust
-- As browse_by_updated, of one trust: the page is found in lessons_by_trust (owner, trust,
-- updated_at), which holds only that trust's lessons in the page's order, so a trust few
-- lessons have (disputed) is not looked for among every lesson of the owner.
SELECT pk, value_digest, pending_version, doc FROM lesson_docs
WHERE pk IN (SELECT pk FROM lessons INDEXED BY lessons_by_trust
WHERE owner IN (SELECT value FROM json_each(:owners))
  AND trust = :trust AND trust != 'rejected'
  AND (:scope IS NULL OR scope = :scope)
  AND (:prefix IS NULL OR substr(scope, 1, length(:prefix)) = :prefix)
  AND CASE :state
        WHEN 'archived' THEN status = 'archived'
        WHEN 'expired' THEN status = 'active' AND expires_at IS NOT NULL AND expires_at <= :now
        ELSE status = 'active' AND (expires_at IS NULL OR expires_at > :now) END
  AND (:ntags = 0 OR (SELECT count(*) FROM json_each(lessons.tags) AS t
                      WHERE t.value IN (SELECT value FROM json_each(:tags))) = :ntags)
  AND (:after_at IS NULL OR updated_at < :after_at OR (updated_at = :after_at AND pk < :after_pk))
ORDER BY updated_at DESC, pk DESC
LIMIT :limit)
ORDER BY updated_at DESC, pk DESC;

-- name: browse_by_seen
-- As browse_by_updated, most seen (distinct sessions) first.
SELECT pk, value_digest, pending_version, doc FROM lesson_docs
WHERE pk IN (SELECT pk FROM lessons INDEXED BY lessons_browse_seen
WHERE owner IN (SELECT value FROM json_each(:owners))
  AND (:scope IS NULL OR scope = :scope)
  AND (:prefix IS NULL OR substr(scope, 1, length(:prefix)) = :prefix)
  AND trust != 'rejected' AND (:trust IS NULL OR trust = :trust)
  AND status = CASE :state WHEN 'archived' THEN 'archived' ELSE 'active' END
  AND CASE :state
        WHEN 'archived' THEN status = 'archived'
        WHEN 'expired' THEN status = 'active' AND expires_at IS NOT NULL AND expires_at <= :now
        ELSE status = 'active' AND (expires_at IS NULL OR expires_at > :now) END
  AND (:ntags = 0 OR (SELECT count(*) FROM json_each(lessons.tags) AS t
                      WHERE t.value IN (SELECT value FROM json_each(:tags))) = :ntags)
  AND (:after_seen IS NULL OR seen_count < :after_seen
       OR (seen_count = :after_seen AND pk < :after_pk))
ORDER BY seen_count DESC, pk DESC
LIMIT :limit)
ORDER BY seen_count DESC, pk DESC;

-- name: search
-- Active, unexpired lessons in the given scopes matching an FTS5 expression (:find), best BM25
-- first (ORDER BY rank lets FTS5 return matches in rank order instead of sorting them all),
-- with row keys from :since up to :before (a frequent word's window, sql/lessons.py).
SELECT l.pk, l.value_digest, l.pending_version, l.doc,
       -rank AS score,
       snippet(lessons_fts, 1, '[', ']', '…', 16) AS snippet
FROM lessons_fts JOIN lesson_docs AS l ON l.pk = lessons_fts.rowid
WHERE lessons_fts MATCH :find AND rank MATCH 'bm25(4.0, 1.0, 2.0)'
  AND lessons_fts.rowid >= :since AND lessons_fts.rowid < :before
  AND l.owner || char(31) || l.scope IN (SELECT value FROM json_each(:addresses))
  AND l.status = 'active' AND l.trust != 'rejected'
  AND (l.expires_at IS NULL OR l.expires_at > :now)
  AND (:ntags = 0 OR (SELECT count(*) FROM json_each(l.tags) AS t
                      WHERE t.value IN (SELECT value FROM json_each(:tags))) = :ntags)
ORDER BY rank
LIMIT :limit;

-- name: search_newest
-- The same lessons as `search` for an expression of common words (sql/lessons.py): newest
-- first as the index walks them, unranked, so only the rows returned are scored.
SELECT l.pk, l.value_digest, l.pending_version, l.doc,
       -bm25(lessons_fts, 4.0, 1.0, 2.0) AS score,
       snippet(lessons_fts, 1, '[', ']', '…', 16) AS snippet
FROM lessons_fts JOIN lesson_docs AS l ON l.pk = lessons_fts.rowid
WHERE lessons_fts MATCH :find
  AND l.owner || char(31) || l.scope IN (SELECT value FROM json_each(:addresses))
  AND l.status = 'active' AND l.trust != 'rejected'
  AND (l.expires_at IS NULL OR l.expires_at > :now)
  AND (:ntags = 0 OR (SELECT count(*) FROM json_each(l.tags) AS t
                      WHERE t.value IN (SELECT value FROM json_each(:tags))) = :ntags)
ORDER BY lessons_fts.rowid DESC
LIMIT :limit;

-- name: word_shares
-- The newest :sample lessons of the store (how many were read: every lesson the index holds,
-- when it holds fewer, and the row keys they span), and how many of them hold each word (a
-- JSON list of FTS5 expressions), found by rowid in the index (sql/lessons.py,
-- _word_classes).
WITH sample AS (
    SELECT count(*) AS size, coalesce(min(pk), 0) AS first, max(pk) AS last
    FROM (SELECT pk FROM lessons ORDER BY pk DESC LIMIT :sample))
SELECT size AS total,
       (SELECT json_group_array((SELECT count(*) FROM lessons_fts
                                 WHERE lessons_fts MATCH w.value AND rowid >= sample.first))
        FROM json_each(:words) AS w) AS held,
       first AS oldest, last AS newest
FROM sample;

-- name: scope_counts
-- Inventory: lessons per scope by state, each lesson in one bucket (rejected before expired),
-- and the active ones by trust. The counters of migration 0030 hold every lesson but expiry
-- (it depends on the time): the expired ones, not yet purged by the sweep, are found through
-- lessons_expiring and moved from their trust's count to the expired bucket.
SELECT t.owner, t.scope,
       t.candidate + t.corroborated + t.verified + t.disputed - coalesce(e.expired, 0)
           AS active,
       t.archived, coalesce(e.expired, 0) AS expired, t.rejected,
       t.candidate - coalesce(e.candidate, 0) AS candidate,
       t.corroborated - coalesce(e.corroborated, 0) AS corroborated,
       t.verified - coalesce(e.verified, 0) AS verified,
       t.disputed - coalesce(e.disputed, 0) AS disputed
FROM scope_tallies AS t
LEFT JOIN (SELECT owner, scope, count(*) AS expired, sum(trust = 'candidate') AS candidate,
                  sum(trust = 'corroborated') AS corroborated,
                  sum(trust = 'verified') AS verified, sum(trust = 'disputed') AS disputed
           FROM lessons INDEXED BY lessons_expiring
           WHERE owner IN (SELECT value FROM json_each(:owners))
             AND expires_at IS NOT NULL AND expires_at <= :now
             AND status = 'active' AND trust != 'rejected'
           GROUP BY owner, scope) AS e ON e.owner = t.owner AND e.scope = t.scope
WHERE t.owner IN (SELECT value FROM json_each(:owners))
ORDER BY t.scope, t.owner;

-- name: archived_before
-- Archived lessons whose archive time is older than the retention cutoff.
SELECT * FROM lessons
WHERE owner = :owner AND status = 'archived' AND archived_at < :cutoff
ORDER BY archived_at, pk LIMIT :limit;

-- name: expired_before
-- Lessons whose expiry has passed.
SELECT * FROM lessons
WHERE owner = :owner AND expires_at IS NOT NULL AND expires_at <= :now
ORDER BY expires_at, pk LIMIT :limit;

-- name: purge_recall_log
-- Recall-log retention: erase an owner's entries recorded before the cutoff.
DELETE FROM recall_log WHERE owner = :owner AND at < :cutoff;

-- name: last_audit_hash
-- The head of an owner's audit hash chain.
SELECT hash FROM audit_log WHERE owner = :owner ORDER BY id DESC LIMIT 1;

-- name: append_audit
-- Append one audit event.
INSERT INTO audit_log (owner, at, actor, action, scope, key, lesson_id, before_version,
    after_version, before_digest, after_digest, reason, detail, prev_hash, hash)
VALUES (:owner, :at, :actor, :action, :scope, :key, :lesson_id, :before_version,
    :after_version, :before_digest, :after_digest, :reason, :detail, :prev_hash, :hash);

-- name: append_audits
-- Append one audit event given as a row (run once per event of a batch, in chain order).
INSERT INTO audit_log (owner, at, actor, action, scope, key, lesson_id, before_version,
    after_version, before_digest, after_digest, reason, detail, prev_hash, hash)
VALUES (:owner, :at, :actor, :action, :scope, :key, :lesson_id, :before_version,
    :after_version, :before_digest, :after_digest, :reason, :detail, :prev_hash, :hash);

-- name: audit_events
-- Audit events of an owner, newest first, filtered by address and time.
SELECT * FROM audit_log
WHERE owner IN (SELECT value FROM json_each(:owners))
  AND (:scope IS NULL OR scope = :scope)
  AND (:key IS NULL OR key = :key)
  AND (:since IS NULL OR at >= :since)
  AND (:until IS NULL OR at < :until)
  AND (:after_id IS NULL OR id < :after_id)
ORDER BY id DESC LIMIT :limit;

-- name: audit_events_at
-- As audit_events, of one address: the equalities let the index by address (owner, scope,
-- key, id) seek it, where the optional filters above leave the planner walking every event.
SELECT * FROM audit_log
WHERE owner IN (SELECT value FROM json_each(:owners))
  AND scope = :scope AND key = :key
  AND (:since IS NULL OR at >= :since)
  AND (:until IS NULL OR at < :until)
  AND (:after_id IS NULL OR id < :after_id)
ORDER BY id DESC LIMIT :limit;

-- name: audit_activity
-- Audit events of these owners since the start of a day (UTC), counted by day and action:
-- read from the per-day counters of migration 0030, one row per owner, day and action.
SELECT day, action, sum(events) AS n FROM audit_day_counts
WHERE owner IN (SELECT value FROM json_each(:owners)) AND day >= substr(:since, 1, 10)
GROUP BY day, action;

-- name: recall_activity
-- Recalls of these owners since the start of a day (UTC), and the lessons they held, by day:
-- read from the per-day counters of migration 0032, one row per owner and day.
SELECT day, sum(recalls) AS recalls, sum(held) AS held FROM recall_day_counts
WHERE owner IN (SELECT value FROM json_each(:owners)) AND day >= substr(:since, 1, 10)
GROUP BY day;

-- name: audit_chain
-- Every audit event of an owner in chain order.
SELECT * FROM audit_log WHERE owner = :owner ORDER BY id;

-- name: audit_head
-- The head kept beside an owner's chain (its count and last hash), moved only by appends.
SELECT events, last_hash FROM audit_heads WHERE owner = :owner;

-- name: audit_heads_behind
-- Owners whose head is not their last stored event (the newest events were deleted): one
-- indexed row per owner, cheap enough for every open.
SELECT h.owner, h.events FROM audit_heads AS h
WHERE h.last_hash IS NOT (SELECT a.hash FROM audit_log AS a WHERE a.owner = h.owner
                          ORDER BY a.id DESC LIMIT 1);

-- name: insert_token
-- Store a new token (its hash, never the secret).
INSERT INTO tokens (id, principal, name, token_hash, prefix, permission, scopes, orgs,
    created_at, created_by, expires_at)
VALUES (:id, :principal, :name, :token_hash, :prefix, :permission, :scopes, :orgs,
    :created_at, :created_by, :expires_at);

-- name: token_by_hash
-- The token presented by a caller, found by the hash of what it presented.
SELECT * FROM tokens WHERE token_hash = :token_hash;

-- name: list_tokens
-- A principal's tokens, newest first.
SELECT * FROM tokens WHERE principal = :principal ORDER BY created_at DESC, id;

-- name: revoke_token
-- Revoke a principal's live token.
UPDATE tokens SET revoked_at = :at
WHERE principal = :principal AND id = :id AND revoked_at IS NULL;

-- name: touch_token
-- Remember when a token was last used.
UPDATE tokens SET last_used_at = :at WHERE id = :id;

-- name: applied_migrations
-- Migrations already applied, with their checksums.
SELECT number, name, checksum FROM schema_migrations ORDER BY number;

-- name: record_migration
-- Record an applied migration.
INSERT INTO schema_migrations (number, name, checksum, applied_at) VALUES (?, ?, ?, ?);

-- name: bindings_for
-- Every approved scope binding (the ones that route), with the principal's role in the
-- bound org (NULL: not a member).
SELECT b.org, b.pattern, m.role FROM scope_bindings AS b
LEFT JOIN memberships AS m ON m.org = b.org AND m.member = :principal
WHERE b.approved_at IS NOT NULL;

-- name: memberships
-- The orgs a principal belongs to.
SELECT * FROM memberships WHERE member = :principal ORDER BY org;

-- name: org_members
-- The members of an org.
SELECT * FROM memberships WHERE org = :org ORDER BY member;

-- name: ensure_principal
-- Create a principal the first time it acts or is named.
INSERT OR IGNORE INTO principals (id, kind, name, created_at) VALUES (:id, :kind, :name, :at);

-- name: insert_org
-- Create an org principal; ignored when the id is taken.
INSERT OR IGNORE INTO principals (id, kind, name, created_at) VALUES (:id, 'org', :name, :at);

-- name: set_member
-- Add a member to an org, or change their role.
INSERT INTO memberships (org, member, role, created_at) VALUES (:org, :member, :role, :at)
ON CONFLICT (org, member) DO UPDATE SET role = excluded.role;

-- name: remove_member
-- Remove a member from an org.
DELETE FROM memberships WHERE org = :org AND member = :member;

-- name: insert_invite
-- Record an invite (the code's hash, never the code).
INSERT INTO invites (id, org, invitee, role, code_hash, created_by, created_at, expires_at)
VALUES (:id, :org, :invitee, :role, :code_hash, :created_by, :created_at, :expires_at)
RETURNING expires_at;

-- name: org_invites
-- The invites of an org, oldest first.
SELECT * FROM invites WHERE org = :org ORDER BY created_at, id;

-- name: revoke_invite
-- Take back a pending invite.
UPDATE invites SET revoked_at = :at, revoked_by = :by
WHERE org = :org AND id = :id AND accepted_at IS NULL AND revoked_at IS NULL;

-- name: live_invite
-- A live invite addressed to the principal with this code.
SELECT * FROM invites
WHERE code_hash = :code_hash AND invitee = :principal AND accepted_at IS NULL
  AND revoked_at IS NULL AND expires_at > :at;

-- name: mark_invite_accepted
-- An invite is used once.
UPDATE invites SET accepted_at = :at WHERE id = :id;

-- name: insert_binding
-- Route a scope pattern to an org; ignored when the pattern is bound already.
INSERT OR IGNORE INTO scope_bindings (org, pattern, created_by, created_at, approved_at,
    approved_by)
VALUES (:org, :pattern, :by, :at, CASE WHEN :approved THEN :at END,
    CASE WHEN :approved THEN :by END);

-- name: delete_binding
-- Remove a scope binding.
DELETE FROM scope_bindings WHERE org = :org AND pattern = :pattern;

-- name: scopes_held_by_others
-- Whether a lesson of an owner other than :org and :actor sits at a scope a binding of
-- :pattern claims (a repository pattern: its branches too); the LIKE patterns are derived here.
WITH liked AS (
    SELECT :org AS org, :actor AS excluded, replace(replace(replace(replace(:pattern, '\', '\\'), '%', '\%'), '_', '\_'), '*', '%') AS p,
           :pattern LIKE 'repo::%' AS repo
)
SELECT EXISTS (
    SELECT 1 FROM lessons AS l, liked
    WHERE l.owner != liked.org AND l.owner != liked.excluded
      AND (l.scope LIKE liked.p ESCAPE '\'
           OR (liked.repo AND l.scope LIKE 'branch::' || substr(liked.p, 7) || '::%' ESCAPE '\'))
) AS held;

-- name: store_setting
-- A setting of the store as a whole (store_settings), such as the secret ids derive from.
SELECT value FROM store_settings WHERE name = :name;

-- name: org_has_outsiders
-- Whether a user outside the org holds anything here (a lesson, a token, a membership);
-- user:local, the store's own person, is the operator who approves bindings anyway.
SELECT EXISTS (
    SELECT 1 FROM principals AS p
    WHERE p.kind = 'user' AND p.id != 'user:local'
      AND NOT EXISTS (SELECT 1 FROM memberships AS m WHERE m.org = :org AND m.member = p.id)
      AND (EXISTS (SELECT 1 FROM lessons AS l WHERE l.owner = p.id)
           OR EXISTS (SELECT 1 FROM tokens AS t WHERE t.principal = p.id)
           OR EXISTS (SELECT 1 FROM memberships AS o WHERE o.member = p.id))
) AS outsiders;

-- name: pending_bindings
-- The scope bindings waiting for an operator's approval (they route nothing yet).
SELECT org, pattern, NULL AS role, created_by, created_at FROM scope_bindings
WHERE approved_at IS NULL ORDER BY created_at, pattern;

-- name: binding_claims_held
-- Whether a lesson of an owner other than the org and the binding's creator sits at a scope
-- the pending binding claims (an operator's question).
WITH liked AS (
    SELECT org, created_by AS excluded, replace(replace(replace(replace(pattern, '\', '\\'), '%', '\%'), '_', '\_'), '*', '%') AS p,
           pattern LIKE 'repo::%' AS repo
    FROM scope_bindings WHERE org = :org AND pattern = :pattern AND approved_at IS NULL
)
SELECT EXISTS (
    SELECT 1 FROM lessons AS l, liked
    WHERE l.owner != liked.org AND l.owner != liked.excluded
      AND (l.scope LIKE liked.p ESCAPE '\'
           OR (liked.repo AND l.scope LIKE 'branch::' || substr(liked.p, 7) || '::%' ESCAPE '\'))
) AS held;

-- name: approve_binding
-- An operator approves a pending binding: from now on it routes its scopes.
UPDATE scope_bindings SET approved_at = :at, approved_by = :by
WHERE org = :org AND pattern = :pattern AND approved_at IS NULL;

-- name: reject_binding
-- An operator refuses a pending binding.
DELETE FROM scope_bindings WHERE org = :org AND pattern = :pattern AND approved_at IS NULL;

-- name: set_max_active
-- Set an owner's cap on active lessons (NULL: the store's default).
INSERT INTO owner_stats (owner, max_active) VALUES (:owner, :limit)
ON CONFLICT (owner) DO UPDATE SET max_active = excluded.max_active;

-- name: set_max_bytes
-- Set an owner's cap on stored bytes (NULL: the store's default).
INSERT INTO owner_stats (owner, max_bytes) VALUES (:owner, :limit)
ON CONFLICT (owner) DO UPDATE SET max_bytes = excluded.max_bytes;

-- name: set_default_caps
-- Set the caps of every owner without its own (NULL: no cap).
UPDATE cap_defaults SET max_active = :max_active, max_bytes = :max_bytes;

-- name: owner_caps
-- An owner's counters and own caps beside the store's defaults (no owner row: NULLs).
SELECT s.active_lessons, s.stored_bytes, s.max_active, s.max_bytes,
    d.max_active AS default_active, d.max_bytes AS default_bytes
FROM cap_defaults AS d LEFT JOIN owner_stats AS s ON s.owner = :owner;

-- name: count_request
-- Count n requests (a lease, service/budget.py) against a token's fixed window; a new
-- window restarts the count.
INSERT INTO token_usage (token_id, window_start, requests) VALUES (:token_id, :window, :n)
ON CONFLICT (token_id) DO UPDATE SET
    requests = CASE WHEN window_start = excluded.window_start THEN requests + excluded.requests
        ELSE excluded.requests END,
    window_start = excluded.window_start
RETURNING requests;

-- name: recall_by_text
-- Recall candidates that the task's words (:find) match, over all the ladder's rungs in one
-- full-text pass, with row keys from :since up to :before (a frequent word's window,
-- sql/lessons.py), best BM25 first (the weights of `search`; ties oldest first, as FTS5's
-- rank order gives them). Only the ladder's matches are ranked: each match is first looked up in
-- recall_lessons (migration recall_create_addresses), which holds the lessons recall
-- considers with an integer for their address, so a common word's matches in other scopes
-- cost a small lookup instead of BM25 (`ORDER BY rank` ranked every match in every scope
-- before the join dropped most of them).
SELECT l.*, -hit.score AS score,
    json_extract(l.source, '$.agent') AS source_agent,
    json_extract(l.source, '$.author') AS source_author,
    json_extract(l.source, '$.commit') AS source_commit
FROM (
    SELECT lessons_fts.rowid AS pk, bm25(lessons_fts, 4.0, 1.0, 2.0) AS score
    FROM lessons_fts CROSS JOIN recall_lessons AS r ON r.pk = lessons_fts.rowid
    WHERE lessons_fts MATCH :find
      AND lessons_fts.rowid >= :since AND lessons_fts.rowid < :before
      AND +r.address IN (
          SELECT a.id FROM json_each(:addresses) AS rung
          JOIN recall_addresses AS a ON a.owner = json_extract(rung.value, '$[0]')
                                    AND a.scope = json_extract(rung.value, '$[1]'))
    ORDER BY score, pk
    LIMIT :limit
) AS hit
JOIN lessons AS l ON l.pk = hit.pk
ORDER BY hit.score, hit.pk;

-- name: count_recall_rungs
-- The active, not rejected lessons of each rung (in the ladder's order), counted up to a cap:
-- whether recall's candidates left some of a rung unweighed, at the cost of at most cap rows
-- a rung. (The capped rows are counted through `pk IN`: SQLite refuses a subquery in FROM
-- that names the outer rung.)
SELECT (SELECT count(*) FROM lessons AS c WHERE c.pk IN (
            SELECT pk FROM lessons
            WHERE owner = json_extract(rung.value, '$[0]')
              AND scope = json_extract(rung.value, '$[1]')
              AND status = 'active' AND trust != 'rejected'
            LIMIT :cap)) AS n
FROM json_each(:addresses) AS rung
ORDER BY rung.key;

-- name: recall_pages
-- Recall candidates of every rung at once, in the ladder's order: each one's newest served (or
-- expired) lessons, then its newest verified and corroborated ones (a lesson may come twice;
-- recall keeps the first).
WITH picked AS (
    SELECT rung.key AS rung, 0 AS page, l.pk
    FROM json_each(:addresses) AS rung
    JOIN lessons AS l ON l.pk IN (
        SELECT pk FROM lessons
        WHERE owner = json_extract(rung.value, '$[0]') AND scope = json_extract(rung.value, '$[1]')
          AND status = 'active' AND trust != 'rejected'
        ORDER BY updated_at DESC, pk DESC
        LIMIT :limit)
    UNION ALL
    SELECT rung.key, 1, l.pk
    FROM json_each(:addresses) AS rung
    JOIN lessons AS l ON l.pk IN (
        SELECT pk FROM lessons
        WHERE owner = json_extract(rung.value, '$[0]') AND scope = json_extract(rung.value, '$[1]')
          AND +status = 'active' AND trust IN ('verified', 'corroborated')
        ORDER BY updated_at DESC, pk DESC
        LIMIT :limit))
SELECT l.*, 0.0 AS score,
    json_extract(l.source, '$.agent') AS source_agent,
    json_extract(l.source, '$.author') AS source_author,
    json_extract(l.source, '$.commit') AS source_commit
FROM picked JOIN lessons AS l ON l.pk = picked.pk
ORDER BY picked.rung, picked.page, l.updated_at DESC, l.pk DESC;

-- name: insert_recall
-- Log one recall decision.
INSERT INTO recall_log (recall_id, owner, at, actor, context, offered, held)
VALUES (:recall_id, :owner, :at, :actor, :context, :offered, :held);

-- name: recent_recalls
-- Logged recall decisions of these owners since a time, newest first.
SELECT * FROM recall_log
WHERE owner IN (SELECT value FROM json_each(:owners)) AND at >= :since
ORDER BY at DESC, recall_id DESC
LIMIT :limit;

-- name: recalls_of_lesson
-- As recent_recalls, only those that offered or held a lesson: the recalls migration 0031's
-- full-text index holds the lesson's id for (a phrase of that one token).
SELECT * FROM recall_log
WHERE rowid IN (SELECT rowid FROM recall_lesson_ids
                WHERE recall_lesson_ids MATCH '"' || replace(:lesson_id, '"', '""') || '"')
  AND owner IN (SELECT value FROM json_each(:owners)) AND at >= :since
ORDER BY at DESC, recall_id DESC
LIMIT :limit;

-- name: get_recall
-- One logged recall decision of these owners.
SELECT * FROM recall_log
WHERE recall_id = :recall_id AND owner IN (SELECT value FROM json_each(:owners));

-- name: scope_policies
-- Revision and review policies of an owner for the given scopes and its default (*).
SELECT * FROM scope_policies
WHERE owner = :owner AND scope IN (SELECT value FROM json_each(:scopes));

-- name: set_policy
-- Set a scope's (or the owner default's) revision and review policy.
INSERT INTO scope_policies (owner, scope, revision_policy, require_review, updated_at, updated_by)
VALUES (:owner, :scope, :revision_policy, :require_review, :at, :by)
ON CONFLICT (owner, scope) DO UPDATE SET revision_policy = excluded.revision_policy,
    require_review = excluded.require_review, updated_at = excluded.updated_at,
    updated_by = excluded.updated_by;

-- name: export_lessons
-- A page of the given owners' lessons in any state, by stable id (`+owner`: seek on the id),
-- as records built by SQLite.
SELECT d.pk, d.value_digest, d.pending_version, d.doc
FROM lessons AS l JOIN lesson_docs AS d ON d.pk = l.pk
WHERE +l.owner IN (SELECT value FROM json_each(:owners)) AND l.id > coalesce(:after_id, '')
ORDER BY l.id LIMIT :limit;

-- name: versions_of
-- Every version of a page of lessons, oldest first, each as its record built by SQLite, with
-- the lesson's id (lorestore export).
SELECT v.lesson_pk, json_object(
        'lesson_id', l.id, 'version', v.version, 'state', v.state, 'value', v.value,
        'value_digest', v.value_digest, 'tags', json(v.tags), 'valid_from', v.valid_from,
        'valid_to', v.valid_to, 'recorded_at', v.recorded_at, 'accepted_at', v.accepted_at,
        'actor', v.actor, 'source', json(v.source)
    ) AS doc
FROM lesson_versions AS v JOIN lessons AS l ON l.pk = v.lesson_pk
WHERE v.lesson_pk IN (SELECT value FROM json_each(:pks))
ORDER BY v.lesson_pk, v.version;

-- name: create_import_stage
-- A per-connection scratch table: a batch of imported lessons is bound into it row by row,
-- then lands in one INSERT ... SELECT (far cheaper per row than one INSERT each, whose
-- full-text trigger program is set up anew for every row).
CREATE TEMP TABLE IF NOT EXISTS import_stage (
    seq INTEGER PRIMARY KEY, id, owner, scope, key, value, value_digest, tags, kind, trust, status,
    version, seen_count, valid_from, valid_to, recorded_at, created_at, updated_at,
    archived_at, expires_at, source, depends_on, review, ext, pending_version
);

-- name: stage_lesson
-- Bind one imported lesson into the scratch table (positional: the columns in order).
INSERT INTO temp.import_stage (id, owner, scope, key, value, value_digest, tags, kind, trust, status,
    version, seen_count, valid_from, valid_to, recorded_at, created_at, updated_at,
    archived_at, expires_at, source, depends_on, review, ext, pending_version)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: import_staged_lessons
-- Add the staged lessons in order under their own ids, skipping any whose id or address is
-- taken; the pk of each that landed (`WHERE true`: the upsert form of INSERT ... SELECT).
INSERT INTO lessons (id, owner, scope, key, value, value_digest, tags, kind, trust, status,
    version, seen_count, valid_from, valid_to, recorded_at, created_at, updated_at,
    archived_at, expires_at, source, depends_on, review, ext, pending_version)
SELECT id, owner, scope, key, value, value_digest, tags, kind, trust, status,
    version, seen_count, valid_from, valid_to, recorded_at, created_at, updated_at,
    archived_at, expires_at, source, depends_on, review, ext, pending_version
FROM temp.import_stage WHERE true ORDER BY seq
ON CONFLICT DO NOTHING
RETURNING pk, id;

-- name: clear_import_stage
-- Empty the scratch table for the next batch.
DELETE FROM temp.import_stage;

-- name: insert_served_versions
-- Record for each of these lessons the version it serves, accepted, by :actor.
INSERT INTO lesson_versions (lesson_pk, version, state, value, value_digest, tags,
    valid_from, valid_to, recorded_at, accepted_at, actor, source)
SELECT pk, version, 'accepted', value, value_digest, tags, valid_from, valid_to,
    recorded_at, NULL, :actor, source
FROM lessons WHERE pk IN (SELECT value FROM json_each(:pks)) ORDER BY pk;

-- name: lookalike_keys
-- Keys of a scope that may look like a key of this skeleton: the one equal to it in ASCII
-- case, and every key with a non-ASCII character (its length in bytes is not in characters);
-- each kind from its own index (migration 0033), one SELECT each (SQLite uses no index for
-- an OR of the two), named: the store keeps no statistics, without which SQLite walks the
-- scope's keys in lessons_address instead.
SELECT key FROM lessons INDEXED BY lessons_key_folded
WHERE owner = :owner AND scope = :scope AND lower(key) = :skeleton
UNION
SELECT key FROM lessons INDEXED BY lessons_key_non_ascii
WHERE owner = :owner AND scope = :scope AND length(key) <> length(CAST(key AS BLOB));

-- name: rejected_values
-- The values an owner's live tombstones at these scopes hold, with their lessons' keys: a
-- rejected lesson's, or a rejected revision's (a version of the digest the tombstone holds).
SELECT l.key, v.value FROM tombstones AS t
JOIN lessons AS l ON l.id = t.lesson_id AND l.owner = t.owner
JOIN lesson_versions AS v ON v.lesson_pk = l.pk AND v.value_digest = t.value_digest
WHERE t.owner = :owner AND t.lifted_at IS NULL
  AND t.scope IN (SELECT value FROM json_each(:scopes));

-- name: live_tombstones
-- An owner's live tombstones of any of these digests, at any scope, oldest first.
SELECT * FROM tombstones
WHERE owner = :owner AND lifted_at IS NULL
  AND value_digest IN (SELECT value FROM json_each(:digests))
ORDER BY created_at;

-- name: lessons_by_ids
-- An owner's lessons with any of these ids, as records (`+owner`: look each id up, never
-- scan the owner's lessons).
SELECT pk, value_digest, pending_version, doc FROM lesson_docs
WHERE pk IN (SELECT pk FROM lessons
             WHERE +owner = :owner AND id IN (SELECT value FROM json_each(:ids)));

-- name: export_tombstones
-- A page of the given owners' tombstones, lifted ones included, by id (seek on the id).
SELECT * FROM tombstones
WHERE +owner IN (SELECT value FROM json_each(:owners)) AND id > coalesce(:after_id, '')
ORDER BY id LIMIT :limit;

-- name: tombstone_by_id
-- One tombstone of an owner by id, live or lifted.
SELECT * FROM tombstones WHERE owner = :owner AND id = :id;

-- name: import_tombstone
-- Add an imported tombstone as it stands (live or lifted); nothing when its id is taken.
INSERT INTO tombstones (id, owner, scope, value_digest, reason, actor, created_at, lesson_id,
    lifted_at, lifted_by, lift_reason, ext)
VALUES (:id, :owner, :scope, :value_digest, :reason, :actor, :created_at, :lesson_id,
    :lifted_at, :lifted_by, :lift_reason, :ext)
ON CONFLICT DO NOTHING;

-- name: export_policies
-- The given owners' scope policies, ordered by owner and scope.
SELECT * FROM scope_policies
WHERE owner IN (SELECT value FROM json_each(:owners))
ORDER BY owner, scope;

-- name: import_policy
-- Add an imported scope policy; nothing when the owner has one for the scope already.
INSERT INTO scope_policies (owner, scope, revision_policy, require_review, updated_at,
    updated_by, ext)
VALUES (:owner, :scope, :revision_policy, :require_review, :updated_at, :updated_by, :ext)
ON CONFLICT DO NOTHING;

-- name: import_foreign
-- Keep an imported record of an unknown type; nothing when it is kept already.
INSERT INTO foreign_records (owner, digest, type, scope, record, imported_at, imported_by)
VALUES (:owner, :digest, :type, :scope, :record, :imported_at, :imported_by)
ON CONFLICT DO NOTHING;

-- name: export_foreign
-- A page of the given owners' kept records of unknown types, by (owner, digest) (a seek).
SELECT * FROM foreign_records
WHERE +owner IN (SELECT value FROM json_each(:owners))
  AND (owner, digest) > (coalesce(:after_owner, ''), coalesce(:after_digest, ''))
ORDER BY owner, digest LIMIT :limit;

-- name: due_owners
-- Owners with lessons expired or archived past retention, or recall entries past retention.
SELECT owner FROM lessons WHERE expires_at IS NOT NULL AND expires_at <= :now
UNION
SELECT owner FROM lessons WHERE status = 'archived' AND archived_at < :archived_cutoff
UNION
SELECT owner FROM recall_log WHERE at < :recall_cutoff;

-- name: add_project_repo
-- Declare (or import) a repository part of an owner's project; nothing when it already is.
INSERT OR IGNORE INTO project_repos (owner, project, repo, added_at, added_by, ext)
VALUES (:owner, :project, :repo, :at, :by, :ext);

-- name: remove_project_repo
-- Take one repository out of an owner's project.
DELETE FROM project_repos WHERE owner = :owner AND project = :project AND repo = :repo;

-- name: remove_project
-- Take every repository out of an owner's project (the project is gone); the ones removed.
DELETE FROM project_repos WHERE owner = :owner AND project = :project RETURNING repo;

-- name: project_repos
-- The project declarations of the given owners, by owner, project and repository.
SELECT * FROM project_repos
WHERE owner IN (SELECT value FROM json_each(:owners))
ORDER BY owner, project, repo;

-- name: projects_of_repo
-- The given owners' projects that hold a repository (recall's project rungs), by name.
SELECT * FROM project_repos
WHERE repo = :repo AND owner IN (SELECT value FROM json_each(:owners))
ORDER BY project, owner;
-- name: put_vector
-- Keep a lesson's vector (replacing another model's or an older text's), unless the same
-- vector of the same model is there already: the REPLACE gives the row a new generation,
-- which every process caching the rung then reads again.
INSERT OR REPLACE INTO lesson_vectors
    (owner, lesson_pk, lesson_id, scope, model, model_version, vector)
SELECT :owner, :lesson_pk, :lesson_id, :scope, :model, :model_version, :vector
WHERE NOT EXISTS (
    SELECT 1 FROM lesson_vectors
    WHERE owner = :owner AND lesson_pk = :lesson_pk AND model = :model
      AND model_version = :model_version AND vector = :vector);

-- name: vector_mark
-- The generation a vector written after this read will have at least (AUTOINCREMENT never
-- reuses a number).
SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'lesson_vectors'), 0) + 1
    AS mark;

-- name: rung_vectors
-- A rung's vectors of the model written at or after a generation (a cache's increment).
SELECT lesson_id AS id, vector FROM lesson_vectors
WHERE owner = :owner AND scope = :scope AND generation >= :since
  AND model = :model AND model_version = :model_version;

-- name: recall_by_ids
-- Recall candidates the semantic pass found, by id, under recall_pages' conditions.
SELECT *, 0.0 AS score,
    json_extract(source, '$.agent') AS source_agent,
    json_extract(source, '$.author') AS source_author,
    json_extract(source, '$.commit') AS source_commit
FROM lessons
WHERE id IN (SELECT value FROM json_each(:ids))
  AND owner IN (SELECT value FROM json_each(:owners))
  AND status = 'active' AND trust != 'rejected';

-- name: lessons_to_embed
-- Lessons (any status) with no vector of the model, or another model's, after a pk: what
-- `lorestore reindex` embeds, a page at a time.
SELECT l.pk, l.id, l.owner, l.scope, l.tags, l.value
FROM lessons AS l
LEFT JOIN lesson_vectors AS v ON v.owner = l.owner AND v.lesson_pk = l.pk
WHERE l.pk > :after
  AND (v.lesson_pk IS NULL OR v.model != :model OR v.model_version != :model_version)
ORDER BY l.pk
LIMIT :limit;

-- name: count_lessons_to_embed
-- How many lessons lessons_to_embed would page through.
SELECT count(*) AS n
FROM lessons AS l
LEFT JOIN lesson_vectors AS v ON v.owner = l.owner AND v.lesson_pk = l.pk
WHERE v.lesson_pk IS NULL OR v.model != :model OR v.model_version != :model_version;
