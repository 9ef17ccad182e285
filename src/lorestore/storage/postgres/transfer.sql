-- Queries of `lorestore migrate` (storage/transfer.py) on PostgreSQL, run as a role that
-- bypasses row-level security (every tenant at once). The select_* queries return the same
-- columns as the SQLite twin (times, ids and JSON are made canonical in Python); each
-- insert_* query adds one batch of rows given as one JSON array of objects in the canonical
-- form (%(rows)s, keyed by column name), casts the canonical text back to timestamptz, uuid
-- and jsonb, and leaves the GENERATED ALWAYS pk and audit ids to the database. One statement
-- per batch, so the counting triggers of migration 0033 run once per batch.

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
-- Add users and orgs.
INSERT INTO principals (id, kind, name, created_at)
SELECT r.id, r.kind, r.name, r.created_at
FROM json_to_recordset(%(rows)s::json) AS r (id text, kind text, name text, created_at timestamptz);

-- name: select_memberships
-- Who belongs to which org, with which role.
SELECT org, member, role, created_at FROM memberships ORDER BY org, member;

-- name: insert_memberships
-- Add memberships.
INSERT INTO memberships (org, member, role, created_at)
SELECT r.org, r.member, r.role, r.created_at
FROM json_to_recordset(%(rows)s::json) AS r (org text, member text, role text, created_at timestamptz);

-- name: select_invites
-- Invites, accepted or not (codes as hashes only).
SELECT id, org, invitee, role, code_hash, created_by, created_at, expires_at, accepted_at,
    revoked_at, revoked_by
FROM invites ORDER BY id;

-- name: insert_invites
-- Add invites.
INSERT INTO invites (id, org, invitee, role, code_hash, created_by, created_at, expires_at,
    accepted_at, revoked_at, revoked_by)
SELECT r.id, r.org, r.invitee, r.role, r.code_hash, r.created_by, r.created_at, r.expires_at,
    r.accepted_at, r.revoked_at, r.revoked_by
FROM json_to_recordset(%(rows)s::json) AS r (id uuid, org text, invitee text, role text, code_hash text,
    created_by text, created_at timestamptz, expires_at timestamptz, accepted_at timestamptz,
    revoked_at timestamptz, revoked_by text);

-- name: select_scope_bindings
-- Scope patterns routed to orgs.
SELECT org, pattern, created_by, created_at, approved_at, approved_by FROM scope_bindings
ORDER BY org, pattern;

-- name: insert_scope_bindings
-- Add scope bindings.
INSERT INTO scope_bindings (org, pattern, created_by, created_at, approved_at, approved_by)
SELECT r.org, r.pattern, r.created_by, r.created_at, r.approved_at, r.approved_by
FROM json_to_recordset(%(rows)s::json) AS r (org text, pattern text, created_by text, created_at timestamptz,
    approved_at timestamptz, approved_by text);

-- name: select_tokens
-- Tokens as stored: the hash of the secret, never the secret.
SELECT id, principal, name, token_hash, prefix, permission, scopes, orgs, created_at,
    created_by, expires_at, revoked_at, last_used_at
FROM tokens ORDER BY id;

-- name: insert_tokens
-- Add tokens (their hashes).
INSERT INTO tokens (id, principal, name, token_hash, prefix, permission, scopes, orgs,
    created_at, created_by, expires_at, revoked_at, last_used_at)
SELECT r.id, r.principal, r.name, r.token_hash, r.prefix, r.permission, r.scopes::jsonb,
    r.orgs::jsonb, r.created_at, r.created_by, r.expires_at, r.revoked_at, r.last_used_at
FROM json_to_recordset(%(rows)s::json) AS r (id uuid, principal text, name text, token_hash text, prefix text,
    permission text, scopes text, orgs text, created_at timestamptz, created_by text,
    expires_at timestamptz, revoked_at timestamptz, last_used_at timestamptz);

-- name: select_scope_policies
-- Per-scope revision and review policy.
SELECT owner, scope, revision_policy, require_review, updated_at, updated_by, ext
FROM scope_policies ORDER BY owner, scope;

-- name: insert_scope_policies
-- Add scope policies.
INSERT INTO scope_policies (owner, scope, revision_policy, require_review, updated_at,
    updated_by, ext)
SELECT r.owner, r.scope, r.revision_policy, r.require_review, r.updated_at, r.updated_by,
    r.ext::jsonb
FROM json_to_recordset(%(rows)s::json) AS r (owner text, scope text, revision_policy text, require_review boolean,
    updated_at timestamptz, updated_by text, ext text);

-- name: select_project_repos
-- The repositories of each owner's projects.
SELECT owner, project, repo, added_at, added_by, ext FROM project_repos
ORDER BY owner COLLATE "C", project COLLATE "C", repo COLLATE "C";

-- name: insert_project_repos
-- Add repositories to owners' projects.
INSERT INTO project_repos (owner, project, repo, added_at, added_by, ext)
SELECT r.owner, r.project, r.repo, r.added_at, r.added_by, r.ext::jsonb
FROM json_to_recordset(%(rows)s::json) AS r (owner text, project text, repo text, added_at timestamptz, added_by text,
    ext text);

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
-- Add tombstones as they stand (live or lifted).
INSERT INTO tombstones (id, owner, scope, value_digest, reason, actor, created_at, lesson_id,
    lifted_at, lifted_by, lift_reason, ext)
SELECT r.id, r.owner, r.scope, r.value_digest, r.reason, r.actor, r.created_at, r.lesson_id,
    r.lifted_at, r.lifted_by, r.lift_reason, r.ext::jsonb
FROM json_to_recordset(%(rows)s::json) AS r (id uuid, owner text, scope text, value_digest text, reason text,
    actor text, created_at timestamptz, lesson_id uuid, lifted_at timestamptz,
    lifted_by text, lift_reason text, ext text);

-- name: select_lessons
-- The served row of every address, without its store-local pk.
SELECT id, owner, scope, key, value, value_digest, tags, kind, trust, status, version,
    seen_count, valid_from, valid_to, recorded_at, created_at, updated_at, archived_at,
    expires_at, source, depends_on, review, ext, pending_version
FROM lessons ORDER BY id;

-- name: insert_lessons
-- Add lessons under their stable ids, in the batch's order; the database assigns the pks.
INSERT INTO lessons (id, owner, scope, key, value, value_digest, tags, kind, trust, status,
    version, seen_count, valid_from, valid_to, recorded_at, created_at, updated_at,
    archived_at, expires_at, source, depends_on, review, ext, pending_version)
SELECT r.id, r.owner, r.scope, r.key, r.value, r.value_digest, r.tags::jsonb, r.kind, r.trust,
    r.status, r.version, r.seen_count, r.valid_from, r.valid_to, r.recorded_at, r.created_at,
    r.updated_at, r.archived_at, r.expires_at, r.source::jsonb, r.depends_on::jsonb,
    r.review::jsonb, r.ext::jsonb, r.pending_version
FROM ROWS FROM (json_to_recordset(%(rows)s::json) AS (id uuid, owner text, scope text, key text,
    value text, value_digest text, tags text, kind text, trust text, status text,
    version integer, seen_count integer, valid_from timestamptz, valid_to timestamptz,
    recorded_at timestamptz, created_at timestamptz, updated_at timestamptz,
    archived_at timestamptz, expires_at timestamptz, source text, depends_on text,
    review text, ext text, pending_version integer)) WITH ORDINALITY AS r
ORDER BY r.ordinality;

-- name: select_lesson_versions
-- Every version, addressed by its lesson's stable id.
SELECT l.id AS lesson_id, v.version, v.state, v.value, v.value_digest, v.tags, v.valid_from,
    v.valid_to, v.recorded_at, v.accepted_at, v.actor, v.source
FROM lesson_versions AS v JOIN lessons AS l ON l.pk = v.lesson_pk
ORDER BY l.id, v.version;

-- name: insert_lesson_versions
-- Add versions under the target's pk of their lessons (each owned as its lesson, for RLS).
INSERT INTO lesson_versions (owner, lesson_pk, version, state, value, value_digest, tags,
    valid_from, valid_to, recorded_at, accepted_at, actor, source)
SELECT (SELECT l.owner FROM lessons AS l WHERE l.pk = r.lesson_pk), r.lesson_pk, r.version,
    r.state, r.value, r.value_digest, r.tags::jsonb, r.valid_from, r.valid_to, r.recorded_at,
    r.accepted_at, r.actor, r.source::jsonb
FROM json_to_recordset(%(rows)s::json) AS r (lesson_pk bigint, version integer, state text, value text,
    value_digest text, tags text, valid_from timestamptz, valid_to timestamptz,
    recorded_at timestamptz, accepted_at timestamptz, actor text, source text);

-- name: select_lesson_sessions
-- The distinct sessions that wrote each value, by the lesson's stable id.
SELECT l.id AS lesson_id, s.value_digest, s.session, s.first_seen
FROM lesson_sessions AS s JOIN lessons AS l ON l.pk = s.lesson_pk
ORDER BY l.id, s.value_digest, s.session;

-- name: insert_lesson_sessions
-- Add session sightings under the target's pk of their lessons (owner copied, for RLS).
INSERT INTO lesson_sessions (owner, lesson_pk, value_digest, session, first_seen)
SELECT (SELECT l.owner FROM lessons AS l WHERE l.pk = r.lesson_pk), r.lesson_pk,
    r.value_digest, r.session, r.first_seen
FROM json_to_recordset(%(rows)s::json) AS r (lesson_pk bigint, value_digest text, session text,
    first_seen timestamptz);

-- name: select_audit_log
-- Every audit event in chain order (id order is each owner's chain order).
SELECT id, owner, at, actor, action, scope, key, lesson_id, before_version, after_version,
    before_digest, after_digest, reason, detail, prev_hash, hash
FROM audit_log ORDER BY id;

-- name: select_recall_log
-- Recall decisions (why each lesson did or did not reach a task).
SELECT recall_id, owner, at, actor, context, offered, held FROM recall_log ORDER BY recall_id;

-- name: insert_recall_log
-- Add recall decisions.
INSERT INTO recall_log (recall_id, owner, at, actor, context, offered, held)
SELECT r.recall_id, r.owner, r.at, r.actor, r.context::jsonb, r.offered::jsonb, r.held::jsonb
FROM json_to_recordset(%(rows)s::json) AS r (recall_id uuid, owner text, at timestamptz, actor text, context text,
    offered text, held text);

-- name: select_foreign_records
-- Imported records of unknown types, kept as given.
SELECT owner, digest, type, scope, record, imported_at, imported_by
FROM foreign_records ORDER BY owner, digest;

-- name: insert_foreign_records
-- Add kept records of unknown types.
INSERT INTO foreign_records (owner, digest, type, scope, record, imported_at, imported_by)
SELECT r.owner, r.digest, r.type, r.scope, r.record::jsonb, r.imported_at, r.imported_by
FROM json_to_recordset(%(rows)s::json) AS r (owner text, digest text, type text, scope text, record text,
    imported_at timestamptz, imported_by text);