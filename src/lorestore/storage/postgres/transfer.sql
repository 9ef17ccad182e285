-- Queries of `lorestore migrate` (storage/transfer.py) on PostgreSQL, run as a role that
-- bypasses row-level security (every tenant at once). The select_* queries return the same
-- columns as the SQLite twin (times, ids and JSON are made canonical in Python); the
-- insert_* queries cast the canonical text back to timestamptz, uuid and jsonb, and leave
-- the GENERATED ALWAYS pk and audit ids to the database.

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

-- name: audit_owners
-- Owners with an audit chain (the target locks these chains while it copies).
SELECT DISTINCT owner FROM audit_log ORDER BY owner;

-- name: lock_audit_chains
-- Hold the app's per-owner chain locks until commit, so no writer appends meanwhile.
SELECT pg_advisory_xact_lock(hashtextextended('lorestore.audit:' || o.owner, 0))
FROM (SELECT DISTINCT owner FROM unnest(%(owners)s::text[]) AS u (owner) ORDER BY owner) AS o;

-- name: lesson_pks
-- The target's internal key of every lesson, by stable id (to attach versions and sessions).
SELECT id, pk FROM lessons;

-- name: select_principals
-- Users and orgs.
SELECT id, kind, name, created_at FROM principals ORDER BY id;

-- name: insert_principals
-- Add a user or org.
INSERT INTO principals (id, kind, name, created_at)
VALUES (%(id)s, %(kind)s, %(name)s, %(created_at)s::timestamptz);

-- name: select_memberships
-- Who belongs to which org, with which role.
SELECT org, member, role, created_at FROM memberships ORDER BY org, member;

-- name: insert_memberships
-- Add a membership.
INSERT INTO memberships (org, member, role, created_at)
VALUES (%(org)s, %(member)s, %(role)s, %(created_at)s::timestamptz);

-- name: select_invites
-- Invites, accepted or not (codes as hashes only).
SELECT id, org, invitee, role, code_hash, created_by, created_at, expires_at, accepted_at,
    revoked_at, revoked_by
FROM invites ORDER BY id;

-- name: insert_invites
-- Add an invite.
INSERT INTO invites (id, org, invitee, role, code_hash, created_by, created_at, expires_at,
    accepted_at, revoked_at, revoked_by)
VALUES (%(id)s::uuid, %(org)s, %(invitee)s, %(role)s, %(code_hash)s, %(created_by)s,
    %(created_at)s::timestamptz, %(expires_at)s::timestamptz, %(accepted_at)s::timestamptz,
    %(revoked_at)s::timestamptz, %(revoked_by)s);

-- name: select_scope_bindings
-- Scope patterns routed to orgs.
SELECT org, pattern, created_by, created_at, approved_at, approved_by FROM scope_bindings
ORDER BY org, pattern;

-- name: insert_scope_bindings
-- Add a scope binding.
INSERT INTO scope_bindings (org, pattern, created_by, created_at, approved_at, approved_by)
VALUES (%(org)s, %(pattern)s, %(created_by)s, %(created_at)s::timestamptz,
    %(approved_at)s::timestamptz, %(approved_by)s);

-- name: select_tokens
-- Tokens as stored: the hash of the secret, never the secret.
SELECT id, principal, name, token_hash, prefix, permission, scopes, orgs, created_at,
    created_by, expires_at, revoked_at, last_used_at
FROM tokens ORDER BY id;

-- name: insert_tokens
-- Add a token (its hash).
INSERT INTO tokens (id, principal, name, token_hash, prefix, permission, scopes, orgs,
    created_at, created_by, expires_at, revoked_at, last_used_at)
VALUES (%(id)s::uuid, %(principal)s, %(name)s, %(token_hash)s, %(prefix)s, %(permission)s,
    %(scopes)s::jsonb, %(orgs)s::jsonb, %(created_at)s::timestamptz, %(created_by)s,
    %(expires_at)s::timestamptz, %(revoked_at)s::timestamptz, %(last_used_at)s::timestamptz);

-- name: select_scope_policies
-- Per-scope revision and review policy.
SELECT owner, scope, revision_policy, require_review, updated_at, updated_by, ext
FROM scope_policies ORDER BY owner, scope;

-- name: insert_scope_policies
-- Add a scope policy.
INSERT INTO scope_policies (owner, scope, revision_policy, require_review, updated_at,
    updated_by, ext)
VALUES (%(owner)s, %(scope)s, %(revision_policy)s, %(require_review)s,
    %(updated_at)s::timestamptz, %(updated_by)s, %(ext)s::jsonb);

-- name: select_project_repos
-- The repositories of each owner's projects.
SELECT owner, project, repo, added_at, added_by, ext FROM project_repos
ORDER BY owner COLLATE "C", project COLLATE "C", repo COLLATE "C";

-- name: insert_project_repos
-- Add a repository to an owner's project.
INSERT INTO project_repos (owner, project, repo, added_at, added_by, ext)
VALUES (%(owner)s, %(project)s, %(repo)s, %(added_at)s::timestamptz, %(added_by)s,
    %(ext)s::jsonb);

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
VALUES (%(id)s::uuid, %(owner)s, %(scope)s, %(value_digest)s, %(reason)s, %(actor)s,
    %(created_at)s::timestamptz, %(lesson_id)s::uuid, %(lifted_at)s::timestamptz,
    %(lifted_by)s, %(lift_reason)s, %(ext)s::jsonb);

-- name: select_lessons
-- The served row of every address, without its store-local pk.
SELECT id, owner, scope, key, value, value_digest, tags, kind, trust, status, version,
    seen_count, valid_from, valid_to, recorded_at, created_at, updated_at, archived_at,
    expires_at, source, depends_on, review, ext, pending_version
FROM lessons ORDER BY id;

-- name: insert_lessons
-- Add a lesson under its stable id; the database assigns the pk.
INSERT INTO lessons (id, owner, scope, key, value, value_digest, tags, kind, trust, status,
    version, seen_count, valid_from, valid_to, recorded_at, created_at, updated_at,
    archived_at, expires_at, source, depends_on, review, ext, pending_version)
VALUES (%(id)s::uuid, %(owner)s, %(scope)s, %(key)s, %(value)s, %(value_digest)s,
    %(tags)s::jsonb, %(kind)s, %(trust)s, %(status)s, %(version)s, %(seen_count)s,
    %(valid_from)s::timestamptz, %(valid_to)s::timestamptz, %(recorded_at)s::timestamptz,
    %(created_at)s::timestamptz, %(updated_at)s::timestamptz, %(archived_at)s::timestamptz,
    %(expires_at)s::timestamptz, %(source)s::jsonb, %(depends_on)s::jsonb, %(review)s::jsonb,
    %(ext)s::jsonb, %(pending_version)s);

-- name: select_lesson_versions
-- Every version, addressed by its lesson's stable id.
SELECT l.id AS lesson_id, v.version, v.state, v.value, v.value_digest, v.tags, v.valid_from,
    v.valid_to, v.recorded_at, v.accepted_at, v.actor, v.source
FROM lesson_versions AS v JOIN lessons AS l ON l.pk = v.lesson_pk
ORDER BY l.id, v.version;

-- name: insert_lesson_versions
-- Add a version under the target's pk of its lesson (its owner copied from the lesson, for RLS).
INSERT INTO lesson_versions (owner, lesson_pk, version, state, value, value_digest, tags,
    valid_from, valid_to, recorded_at, accepted_at, actor, source)
VALUES ((SELECT owner FROM lessons WHERE pk = %(lesson_pk)s), %(lesson_pk)s, %(version)s,
    %(state)s, %(value)s, %(value_digest)s, %(tags)s::jsonb, %(valid_from)s::timestamptz,
    %(valid_to)s::timestamptz, %(recorded_at)s::timestamptz, %(accepted_at)s::timestamptz,
    %(actor)s, %(source)s::jsonb);

-- name: select_lesson_sessions
-- The distinct sessions that wrote each value, by the lesson's stable id.
SELECT l.id AS lesson_id, s.value_digest, s.session, s.first_seen
FROM lesson_sessions AS s JOIN lessons AS l ON l.pk = s.lesson_pk
ORDER BY l.id, s.value_digest, s.session;

-- name: insert_lesson_sessions
-- Add a session sighting under the target's pk of its lesson (owner copied, for RLS).
INSERT INTO lesson_sessions (owner, lesson_pk, value_digest, session, first_seen)
VALUES ((SELECT owner FROM lessons WHERE pk = %(lesson_pk)s), %(lesson_pk)s, %(value_digest)s,
    %(session)s, %(first_seen)s::timestamptz);

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
VALUES (%(recall_id)s::uuid, %(owner)s, %(at)s::timestamptz, %(actor)s, %(context)s::jsonb,
    %(offered)s::jsonb, %(held)s::jsonb);

-- name: select_foreign_records
-- Imported records of unknown types, kept as given.
SELECT owner, digest, type, scope, record, imported_at, imported_by
FROM foreign_records ORDER BY owner, digest;

-- name: insert_foreign_records
-- Add a kept record of an unknown type.
INSERT INTO foreign_records (owner, digest, type, scope, record, imported_at, imported_by)
VALUES (%(owner)s, %(digest)s, %(type)s, %(scope)s, %(record)s::jsonb,
    %(imported_at)s::timestamptz, %(imported_by)s);
