-- Queries of `lorestore migrate` (storage/transfer.py) on the embedded store. Each select_*
-- reads one table in its canonical columns (the same names as the PostgreSQL twin, lesson
-- children by the lesson's stable id instead of its pk) in a stable order; each insert_*
-- writes those columns back, letting the store assign pk and audit ids.

-- name: source_counts
-- How many rows each copied table holds (the progress bar's totals).
SELECT (SELECT count(*) FROM principals) AS principals,
       (SELECT count(*) FROM memberships) AS memberships,
       (SELECT count(*) FROM invites) AS invites,
       (SELECT count(*) FROM scope_bindings) AS scope_bindings,
       (SELECT count(*) FROM tokens) AS tokens,
       (SELECT count(*) FROM scope_policies) AS scope_policies,
       (SELECT count(*) FROM project_repos) AS project_repos,
       (SELECT count(*) FROM owner_stats) AS owner_stats,
       (SELECT count(*) FROM tombstones) AS tombstones,
       (SELECT count(*) FROM lessons) AS lessons,
       (SELECT count(*) FROM lesson_versions) AS lesson_versions,
       (SELECT count(*) FROM lesson_sessions) AS lesson_sessions,
       (SELECT count(*) FROM audit_log) AS audit_log,
       (SELECT count(*) FROM recall_log) AS recall_log,
       (SELECT count(*) FROM foreign_records) AS foreign_records;

-- name: applied_migrations
-- Migrations applied to the file, to refuse a source older than this lorestore.
SELECT number, name, checksum FROM schema_migrations ORDER BY number;

-- name: audit_owners
-- Owners with an audit chain (the target locks these chains while it copies).
SELECT DISTINCT owner FROM audit_log ORDER BY owner;

-- name: lesson_pks
-- The target's internal key of every lesson, by stable id (to attach versions and sessions).
SELECT id, pk FROM lessons;

-- name: select_principals
-- Users and orgs.
SELECT id, kind, name, created_at FROM principals ORDER BY id;

-- name: insert_principals
-- Add a user or org.
INSERT INTO principals (id, kind, name, created_at) VALUES (:id, :kind, :name, :created_at);

-- name: select_memberships
-- Who belongs to which org, with which role.
SELECT org, member, role, created_at FROM memberships ORDER BY org, member;

-- name: insert_memberships
-- Add a membership.
INSERT INTO memberships (org, member, role, created_at)
VALUES (:org, :member, :role, :created_at);

-- name: select_invites
-- Invites, accepted or not (codes as hashes only).
SELECT id, org, invitee, role, code_hash, created_by, created_at, expires_at, accepted_at,
    revoked_at, revoked_by
FROM invites ORDER BY id;

-- name: insert_invites
-- Add an invite.
INSERT INTO invites (id, org, invitee, role, code_hash, created_by, created_at, expires_at,
    accepted_at, revoked_at, revoked_by)
VALUES (:id, :org, :invitee, :role, :code_hash, :created_by, :created_at, :expires_at,
    :accepted_at, :revoked_at, :revoked_by);

-- name: select_scope_bindings
-- Scope patterns routed to orgs.
SELECT org, pattern, created_by, created_at, approved_at, approved_by FROM scope_bindings
ORDER BY org, pattern;

-- name: insert_scope_bindings
-- Add a scope binding.
INSERT INTO scope_bindings (org, pattern, created_by, created_at, approved_at, approved_by)
VALUES (:org, :pattern, :created_by, :created_at, :approved_at, :approved_by);

-- name: select_tokens
-- Tokens as stored: the hash of the secret, never the secret.
SELECT id, principal, name, token_hash, prefix, permission, scopes, orgs, created_at,
    created_by, expires_at, revoked_at, last_used_at
FROM tokens ORDER BY id;

-- name: insert_tokens
-- Add a token (its hash).
INSERT INTO tokens (id, principal, name, token_hash, prefix, permission, scopes, orgs,
    created_at, created_by, expires_at, revoked_at, last_used_at)
VALUES (:id, :principal, :name, :token_hash, :prefix, :permission, :scopes, :orgs,
    :created_at, :created_by, :expires_at, :revoked_at, :last_used_at);

-- name: select_scope_policies
-- Per-scope revision and review policy.
SELECT owner, scope, revision_policy, require_review, updated_at, updated_by, ext
FROM scope_policies ORDER BY owner, scope;

-- name: insert_scope_policies
-- Add a scope policy.
INSERT INTO scope_policies (owner, scope, revision_policy, require_review, updated_at,
    updated_by, ext)
VALUES (:owner, :scope, :revision_policy, :require_review, :updated_at, :updated_by, :ext);

-- name: select_project_repos
-- The repositories of each owner's projects.
SELECT owner, project, repo, added_at, added_by, ext FROM project_repos
ORDER BY owner, project, repo;

-- name: insert_project_repos
-- Add a repository to an owner's project.
INSERT INTO project_repos (owner, project, repo, added_at, added_by, ext)
VALUES (:owner, :project, :repo, :added_at, :added_by, :ext);

-- name: select_owner_stats
-- Each owner's own caps (NULL: the store's default; the counts are the triggers' business,
-- the defaults the target's own).
SELECT owner, max_active, max_bytes FROM owner_stats ORDER BY owner;

-- name: select_tombstones
-- Rejected values, lifted ones included.
SELECT id, owner, scope, value_digest, reason, actor, created_at, lesson_id, lifted_at,
    lifted_by, lift_reason, ext
FROM tombstones ORDER BY id;

-- name: insert_tombstones
-- Add a tombstone as it stands (live or lifted).
INSERT INTO tombstones (id, owner, scope, value_digest, reason, actor, created_at, lesson_id,
    lifted_at, lifted_by, lift_reason, ext)
VALUES (:id, :owner, :scope, :value_digest, :reason, :actor, :created_at, :lesson_id,
    :lifted_at, :lifted_by, :lift_reason, :ext);

-- name: select_lessons
-- The served row of every address, without its store-local pk.
SELECT id, owner, scope, key, value, value_digest, tags, kind, trust, status, version,
    seen_count, valid_from, valid_to, recorded_at, created_at, updated_at, archived_at,
    expires_at, source, depends_on, review, ext, pending_version
FROM lessons ORDER BY id;

-- name: insert_lessons
-- Add a lesson under its stable id; the store assigns the pk.
INSERT INTO lessons (id, owner, scope, key, value, value_digest, tags, kind, trust, status,
    version, seen_count, valid_from, valid_to, recorded_at, created_at, updated_at,
    archived_at, expires_at, source, depends_on, review, ext, pending_version)
VALUES (:id, :owner, :scope, :key, :value, :value_digest, :tags, :kind, :trust, :status,
    :version, :seen_count, :valid_from, :valid_to, :recorded_at, :created_at, :updated_at,
    :archived_at, :expires_at, :source, :depends_on, :review, :ext, :pending_version);

-- name: select_lesson_versions
-- Every version, addressed by its lesson's stable id.
SELECT l.id AS lesson_id, v.version, v.state, v.value, v.value_digest, v.tags, v.valid_from,
    v.valid_to, v.recorded_at, v.accepted_at, v.actor, v.source
FROM lesson_versions AS v JOIN lessons AS l ON l.pk = v.lesson_pk
ORDER BY l.id, v.version;

-- name: insert_lesson_versions
-- Add a version under the target's pk of its lesson.
INSERT INTO lesson_versions (lesson_pk, version, state, value, value_digest, tags, valid_from,
    valid_to, recorded_at, accepted_at, actor, source)
VALUES (:lesson_pk, :version, :state, :value, :value_digest, :tags, :valid_from, :valid_to,
    :recorded_at, :accepted_at, :actor, :source);

-- name: select_lesson_sessions
-- The distinct sessions that wrote each value, by the lesson's stable id.
SELECT l.id AS lesson_id, s.value_digest, s.session, s.first_seen
FROM lesson_sessions AS s JOIN lessons AS l ON l.pk = s.lesson_pk
ORDER BY l.id, s.value_digest, s.session;

-- name: insert_lesson_sessions
-- Add a session sighting under the target's pk of its lesson.
INSERT INTO lesson_sessions (lesson_pk, value_digest, session, first_seen)
VALUES (:lesson_pk, :value_digest, :session, :first_seen);

-- name: select_audit_log
-- Every audit event in chain order (id order is each owner's chain order).
SELECT id, owner, at, actor, action, scope, key, lesson_id, before_version, after_version,
    before_digest, after_digest, reason, detail, prev_hash, hash
FROM audit_log ORDER BY id;

-- name: select_recall_log
-- Recall decisions (why each lesson did or did not reach a task).
SELECT recall_id, owner, at, actor, context, offered, held FROM recall_log ORDER BY recall_id;

-- name: insert_recall_log
-- Add a recall decision.
INSERT INTO recall_log (recall_id, owner, at, actor, context, offered, held)
VALUES (:recall_id, :owner, :at, :actor, :context, :offered, :held);

-- name: select_foreign_records
-- Imported records of unknown types, kept as given.
SELECT owner, digest, type, scope, record, imported_at, imported_by
FROM foreign_records ORDER BY owner, digest;

-- name: insert_foreign_records
-- Add a kept record of an unknown type.
INSERT INTO foreign_records (owner, digest, type, scope, record, imported_at, imported_by)
VALUES (:owner, :digest, :type, :scope, :record, :imported_at, :imported_by);
