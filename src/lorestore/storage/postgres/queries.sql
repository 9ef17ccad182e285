-- name: lesson_at
-- The lesson at an address, archived or not.
SELECT * FROM lesson_rows WHERE owner = %(owner)s AND scope = %(scope)s AND key = %(key)s;

-- name: lessons_with_keys
-- The lessons at one scope of an owner holding any of the given keys, archived or not (an
-- agent's search: the narrower lessons that may shadow what it found).
SELECT * FROM lesson_rows WHERE owner = %(owner)s AND scope = %(scope)s AND key = ANY (%(keys)s);

-- name: insert_lesson
-- Create the served row of a new address, under the key reserved for it beforehand
-- (reserve_lesson_key: nothing to wait for) or, given none, the sequence's next.
INSERT INTO lessons (pk, id, owner, scope, key, value, value_digest, tags, kind, trust,
    status, version, seen_count, valid_from, valid_to, recorded_at, created_at, updated_at,
    archived_at, expires_at, source, depends_on, review, ext, pending_version)
OVERRIDING SYSTEM VALUE
VALUES (COALESCE(%(pk)s::bigint, nextval('lessons_pk_seq')), %(id)s::uuid, %(owner)s,
    %(scope)s, %(key)s, %(value)s, %(value_digest)s, %(tags)s::jsonb, %(kind)s, %(trust)s,
    %(status)s, %(version)s, %(seen_count)s, %(valid_from)s::timestamptz,
    %(valid_to)s::timestamptz, %(recorded_at)s::timestamptz, %(created_at)s::timestamptz,
    %(updated_at)s::timestamptz, %(archived_at)s::timestamptz, %(expires_at)s::timestamptz,
    %(source)s::jsonb, %(depends_on)s::jsonb, %(review)s::jsonb, %(ext)s::jsonb,
    %(pending_version)s)
RETURNING pk;

-- name: reserve_lesson_key
-- The key the next new lesson will take (migration 0044), reserved before its insert.
SELECT nextval('lessons_pk_seq') AS pk;

-- name: save_lesson
-- Overwrite the served row of an address; its versions live in lesson_versions.
UPDATE lessons SET value = %(value)s, value_digest = %(value_digest)s, tags = %(tags)s::jsonb,
    kind = %(kind)s, trust = %(trust)s, status = %(status)s, version = %(version)s,
    seen_count = %(seen_count)s, valid_from = %(valid_from)s::timestamptz,
    valid_to = %(valid_to)s::timestamptz, recorded_at = %(recorded_at)s::timestamptz,
    updated_at = %(updated_at)s::timestamptz, archived_at = %(archived_at)s::timestamptz,
    expires_at = %(expires_at)s::timestamptz, source = %(source)s::jsonb,
    depends_on = %(depends_on)s::jsonb, review = %(review)s::jsonb, ext = %(ext)s::jsonb,
    pending_version = %(pending_version)s
WHERE pk = %(pk)s;

-- name: delete_lesson
-- Hard delete: the row, and by cascade every version and session of it.
DELETE FROM lessons WHERE pk = %(pk)s;

-- name: insert_versions
-- Record immutable versions of lessons, a batch given as one JSON array of rows (each owned
-- as its lesson, for RLS): one statement, so migration 0033's counting runs once.
INSERT INTO lesson_versions (owner, lesson_pk, version, state, value, value_digest, tags,
    valid_from, valid_to, recorded_at, accepted_at, actor, source)
SELECT (SELECT l.owner FROM lessons AS l WHERE l.pk = r.lesson_pk), r.lesson_pk, r.version,
    r.state, r.value, r.value_digest, r.tags::jsonb, r.valid_from, r.valid_to, r.recorded_at,
    r.accepted_at, r.actor, r.source::jsonb
FROM json_to_recordset(%(rows)s::json) AS r (lesson_pk bigint, version integer, state text, value text,
    value_digest text, tags text, valid_from timestamptz, valid_to timestamptz,
    recorded_at timestamptz, accepted_at timestamptz, actor text, source text);

-- name: versions
-- Every version of a lesson, oldest first.
SELECT * FROM lesson_versions WHERE lesson_pk = %(pk)s ORDER BY version;

-- name: version
-- One version of a lesson by number.
SELECT * FROM lesson_versions WHERE lesson_pk = %(pk)s AND version = %(number)s;

-- name: max_version
-- The highest version number a lesson has used, proposals included.
SELECT max(version) AS n FROM lesson_versions WHERE lesson_pk = %(pk)s;

-- name: set_version_state
-- Move a version's review state; the immutability trigger guards its content.
UPDATE lesson_versions
SET state = %(state)s, accepted_at = coalesce(%(accepted_at)s::timestamptz, accepted_at)
WHERE lesson_pk = %(pk)s AND version = %(number)s;

-- name: version_at
-- The newest accepted version served at record time as_of that holds at world time valid_at.
SELECT * FROM lesson_versions
WHERE lesson_pk = %(pk)s AND state = 'accepted'
  AND (%(as_of)s::timestamptz IS NULL OR coalesce(accepted_at, recorded_at) <= %(as_of)s::timestamptz)
  AND (%(valid_at)s::timestamptz IS NULL
       OR ((valid_from IS NULL OR valid_from <= %(valid_at)s::timestamptz)
           AND (valid_to IS NULL OR %(valid_at)s::timestamptz < valid_to)))
ORDER BY coalesce(accepted_at, recorded_at) DESC, version DESC LIMIT 1;

-- name: trust_events
-- A lesson's audit events up to a time, newest first, with the trust each recorded.
SELECT action, detail ->> 'trust' AS trust FROM audit_log
WHERE owner = %(owner)s AND scope = %(scope)s AND key = %(key)s
  AND lesson_id = %(lesson_id)s::uuid AND at <= %(at)s::timestamptz
ORDER BY id DESC LIMIT 100;

-- name: add_session
-- Remember that a session wrote this value; ignored when it already did.
INSERT INTO lesson_sessions (owner, lesson_pk, value_digest, session, first_seen)
VALUES ((SELECT owner FROM lessons WHERE pk = %(pk)s), %(pk)s, %(value_digest)s, %(session)s,
    %(at)s::timestamptz)
ON CONFLICT DO NOTHING;

-- name: clear_sessions
-- Forget the sessions of every earlier value when a new version starts.
DELETE FROM lesson_sessions WHERE lesson_pk = %(pk)s;

-- name: insert_tombstone
-- Record a rejected value for a scope.
INSERT INTO tombstones (id, owner, scope, value_digest, reason, actor, created_at, lesson_id)
VALUES (%(id)s::uuid, %(owner)s, %(scope)s, %(value_digest)s, %(reason)s, %(actor)s,
    %(created_at)s::timestamptz, %(lesson_id)s::uuid);

-- name: lift_tombstones
-- Lift the live tombstones of a value at one scope (only those one lesson left, given its id).
UPDATE tombstones
SET lifted_at = %(at)s::timestamptz, lifted_by = %(lifted_by)s, lift_reason = %(reason)s
WHERE owner = %(owner)s AND scope = %(scope)s AND value_digest = %(value_digest)s
  AND lifted_at IS NULL AND (%(lesson_id)s::uuid IS NULL OR lesson_id = %(lesson_id)s::uuid);

-- name: lessons_with_digest
-- Lessons of an owner serving a value with this digest, in any scope, archived ones too (a
-- rejection reaches the copies a restore would bring back).
SELECT * FROM lesson_rows
WHERE owner = %(owner)s AND value_digest = %(value_digest)s;

-- name: review_queue
-- What awaits a person, most urgent first (see the SQLite twin for the reasons); each reason
-- read on its own from its index (migration 0029) up to the limit, the branches disjoint.
SELECT * FROM (
    (SELECT l.*, 'disputed' AS queue_reason, 0 AS queue_rank FROM lesson_rows AS l
        WHERE l.owner = ANY (%(owners)s) AND l.trust = 'disputed' AND l.status = 'active'
          AND (%(scope)s::text IS NULL OR l.scope = %(scope)s::text)
          AND (l.expires_at IS NULL OR l.expires_at > %(now)s::timestamptz)
        ORDER BY l.updated_at DESC, l.pk DESC LIMIT %(limit)s)
    UNION ALL
    (SELECT l.*, 'revision', 1 FROM lesson_rows AS l
        WHERE l.owner = ANY (%(owners)s) AND l.pending_version IS NOT NULL AND l.status = 'active'
          AND l.trust NOT IN ('rejected', 'disputed')
          AND (%(scope)s::text IS NULL OR l.scope = %(scope)s::text)
          AND (l.expires_at IS NULL OR l.expires_at > %(now)s::timestamptz)
        ORDER BY l.updated_at DESC, l.pk DESC LIMIT %(limit)s)
    UNION ALL
    (SELECT l.*, 'corroborated', 2 FROM lesson_rows AS l
        WHERE l.owner = ANY (%(owners)s) AND l.trust = 'corroborated' AND l.pending_version IS NULL
          AND l.status = 'active'
          AND (%(scope)s::text IS NULL OR l.scope = %(scope)s::text)
          AND (l.expires_at IS NULL OR l.expires_at > %(now)s::timestamptz)
        ORDER BY l.updated_at DESC, l.pk DESC LIMIT %(limit)s)
    UNION ALL
    (SELECT l.*, 'recurring', 3 FROM lesson_rows AS l
        WHERE l.owner = ANY (%(owners)s) AND l.trust = 'candidate' AND l.seen_count >= 2
          AND l.pending_version IS NULL AND l.status = 'active'
          AND (%(scope)s::text IS NULL OR l.scope = %(scope)s::text)
          AND (l.expires_at IS NULL OR l.expires_at > %(now)s::timestamptz)
        ORDER BY l.updated_at DESC, l.pk DESC LIMIT %(limit)s)
    UNION ALL
    (SELECT l.*, 'outside_author', 4 FROM lesson_rows AS l
        WHERE l.owner = ANY (%(owners)s) AND (l.source->>'author_association') IS NOT NULL
          AND upper(l.source->>'author_association') NOT IN ('OWNER', 'MEMBER', 'COLLABORATOR')
          AND l.trust = 'candidate' AND l.seen_count < 2
          AND l.pending_version IS NULL AND l.status = 'active'
          AND (%(scope)s::text IS NULL OR l.scope = %(scope)s::text)
          AND (l.expires_at IS NULL OR l.expires_at > %(now)s::timestamptz)
        ORDER BY l.updated_at DESC, l.pk DESC LIMIT %(limit)s)
) AS q
ORDER BY queue_rank, updated_at DESC, pk DESC
LIMIT %(limit)s;

-- name: list_lessons
-- Served lessons of a scope, newest first, after a keyset cursor.
SELECT * FROM lesson_rows
WHERE owner = %(owner)s AND scope = %(scope)s AND status = 'active' AND trust <> 'rejected'
  AND (expires_at IS NULL OR expires_at > %(now)s::timestamptz)
  AND (%(after_at)s::timestamptz IS NULL
       OR (updated_at, pk) < (%(after_at)s::timestamptz, %(after_pk)s::bigint))
  AND tags @> %(tags)s::jsonb
ORDER BY updated_at DESC, pk DESC
LIMIT %(limit)s;

-- name: browse_by_updated
-- Lessons of some owners at a scope or under a scope prefix, in one state, optionally of one
-- trust (never rejected), newest first, after a keyset cursor (memory_list's filters).
-- Owner by owner (LATERAL): with owner = ANY (...) an index scan cannot return rows in the
-- index's order (PostgreSQL 15), so the planner read every lesson of the prefix and sorted
-- them; each owner's page is read in order from lessons_browse_updated up to the limit, and
-- the owners' pages merged.
SELECT l.* FROM (SELECT DISTINCT unnest(%(owners)s::text[]) AS owner) AS o
CROSS JOIN LATERAL (
    SELECT * FROM lesson_rows
    WHERE owner = o.owner
      AND (%(scope)s::text IS NULL OR scope = %(scope)s::text)
      AND (%(prefix)s::text IS NULL OR starts_with(scope, %(prefix)s::text))
      AND trust <> 'rejected' AND (%(trust)s::text IS NULL OR trust = %(trust)s::text)
      AND status = CASE %(state)s::text WHEN 'archived' THEN 'archived' ELSE 'active' END
      AND CASE %(state)s::text
            WHEN 'archived' THEN status = 'archived'
            WHEN 'expired' THEN status = 'active' AND expires_at IS NOT NULL
                                AND expires_at <= %(now)s::timestamptz
            ELSE status = 'active' AND (expires_at IS NULL OR expires_at > %(now)s::timestamptz) END
      AND tags @> %(tags)s::jsonb
      AND (%(after_at)s::timestamptz IS NULL
           OR (updated_at, pk) < (%(after_at)s::timestamptz, %(after_pk)s::bigint))
    ORDER BY updated_at DESC, pk DESC
    LIMIT %(limit)s) AS l
ORDER BY l.updated_at DESC, l.pk DESC
LIMIT %(limit)s;

-- name: browse_by_seen
-- As browse_by_updated, most seen (distinct sessions) first.
-- Owner by owner, as browse_by_updated (lessons_browse_seen).
SELECT l.* FROM (SELECT DISTINCT unnest(%(owners)s::text[]) AS owner) AS o
CROSS JOIN LATERAL (
    SELECT * FROM lesson_rows
    WHERE owner = o.owner
      AND (%(scope)s::text IS NULL OR scope = %(scope)s::text)
      AND (%(prefix)s::text IS NULL OR starts_with(scope, %(prefix)s::text))
      AND trust <> 'rejected' AND (%(trust)s::text IS NULL OR trust = %(trust)s::text)
      AND status = CASE %(state)s::text WHEN 'archived' THEN 'archived' ELSE 'active' END
      AND CASE %(state)s::text
            WHEN 'archived' THEN status = 'archived'
            WHEN 'expired' THEN status = 'active' AND expires_at IS NOT NULL
                                AND expires_at <= %(now)s::timestamptz
            ELSE status = 'active' AND (expires_at IS NULL OR expires_at > %(now)s::timestamptz) END
      AND tags @> %(tags)s::jsonb
      AND (%(after_seen)s::integer IS NULL
           OR (seen_count, pk) < (%(after_seen)s::integer, %(after_pk)s::bigint))
    ORDER BY seen_count DESC, pk DESC
    LIMIT %(limit)s) AS l
ORDER BY l.seen_count DESC, l.pk DESC
LIMIT %(limit)s;

-- name: search
-- Served lessons in the given scopes matching a tsquery (:find), with row keys from :since up to
-- :before (a frequent word's window, sql/lessons.py), best ts_rank_cd first. The
-- hits are found by a definer function so the GIN index is usable under RLS (migration 0009);
-- the rows are then read under RLS, through lesson_rows (no search vector: migration 0038).
-- term_ranks: each word of :match's rank alone, from the lesson's search vector (lessons AS
-- t), which the store weighs by the word's rarity among these hits (core/rarity.py) for the
-- score it returns.
WITH words AS (
    -- each word of the expression as a query of its own, for its rank alone (core/rarity.py)
    SELECT array_agg(to_tsquery('english', lorestore_fold(w)) ORDER BY n) AS queries
    FROM unnest(string_to_array(%(match)s, ' | ')) WITH ORDINALITY AS u (w, n)
)
SELECT l.*, hit.score::float8 AS score,
       ARRAY(SELECT ts_rank_cd(t.search, q)::float8 FROM unnest(words.queries) WITH ORDINALITY
          AS u (q, n) ORDER BY n) AS term_ranks,
       ts_headline('english', l.value, to_tsquery('english', lorestore_fold(%(match)s)),
           'StartSel=[, StopSel=], MaxWords=16, MinWords=6, MaxFragments=1') AS snippet
FROM lorestore_search_hits(to_tsquery('english', lorestore_fold(%(find)s)), %(owners)s::text[],
         %(scopes)s::text[], %(now)s::timestamptz, %(tags)s::jsonb, %(limit)s, %(since)s,
         %(before)s) AS hit
JOIN lesson_rows AS l ON l.pk = hit.pk
JOIN lessons AS t ON t.pk = hit.pk
CROSS JOIN words
ORDER BY hit.score DESC, l.pk;

-- name: search_newest
-- The same lessons as `search` for a tsquery of common words (sql/lessons.py): newest first,
-- unranked (migration 0032).
WITH words AS (
    -- each word of the expression as a query of its own, for its rank alone (core/rarity.py)
    SELECT array_agg(to_tsquery('english', lorestore_fold(w)) ORDER BY n) AS queries
    FROM unnest(string_to_array(%(match)s, ' | ')) WITH ORDINALITY AS u (w, n)
)
SELECT l.*, hit.score::float8 AS score,
       ARRAY(SELECT ts_rank_cd(t.search, q)::float8 FROM unnest(words.queries) WITH ORDINALITY
          AS u (q, n) ORDER BY n) AS term_ranks,
       ts_headline('english', l.value, to_tsquery('english', lorestore_fold(%(match)s)),
           'StartSel=[, StopSel=], MaxWords=16, MinWords=6, MaxFragments=1') AS snippet
FROM lorestore_search_newest(to_tsquery('english', lorestore_fold(%(find)s)), %(owners)s::text[],
         %(scopes)s::text[], %(now)s::timestamptz, %(tags)s::jsonb, %(limit)s) AS hit
JOIN lesson_rows AS l ON l.pk = hit.pk
JOIN lessons AS t ON t.pk = hit.pk
CROSS JOIN words
ORDER BY l.pk DESC;

-- name: word_shares
-- The newest :sample lessons the actor may read (how many were read, and the row keys they
-- span), and how many of them hold each word (sql/lessons.py, _word_classes; migrations 0034,
-- 0039).
SELECT total, held, oldest, newest FROM lorestore_word_shares(%(words)s::text[], %(sample)s);

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
LEFT JOIN (SELECT owner, scope, count(*) AS expired,
                  count(*) FILTER (WHERE trust = 'candidate') AS candidate,
                  count(*) FILTER (WHERE trust = 'corroborated') AS corroborated,
                  count(*) FILTER (WHERE trust = 'verified') AS verified,
                  count(*) FILTER (WHERE trust = 'disputed') AS disputed
           FROM lessons
           WHERE owner = ANY (%(owners)s) AND expires_at IS NOT NULL
             AND expires_at <= %(now)s::timestamptz
             AND status = 'active' AND trust <> 'rejected'
           GROUP BY owner, scope) AS e ON e.owner = t.owner AND e.scope = t.scope
WHERE t.owner = ANY (%(owners)s)
ORDER BY t.scope COLLATE "C", t.owner COLLATE "C";

-- name: archived_before
-- Archived lessons whose archive time is older than the retention cutoff.
SELECT * FROM lesson_rows
WHERE owner = %(owner)s AND status = 'archived' AND archived_at < %(cutoff)s::timestamptz
ORDER BY archived_at, pk LIMIT %(limit)s;

-- name: expired_before
-- Lessons whose expiry has passed.
SELECT * FROM lesson_rows
WHERE owner = %(owner)s AND expires_at IS NOT NULL AND expires_at <= %(now)s::timestamptz
ORDER BY expires_at, pk LIMIT %(limit)s;

-- name: lock_audit_chain
-- Serialise appends to one owner's hash chain until the transaction ends.
SELECT pg_advisory_xact_lock(hashtextextended('lorestore.audit:' || %(owner)s, 0));

-- name: last_audit_hash
-- The head of an owner's audit hash chain.
SELECT hash FROM audit_log WHERE owner = %(owner)s ORDER BY id DESC LIMIT 1;

-- name: append_audit
-- Append one audit event (nothing returned: in a pipelined write, nothing to wait for).
INSERT INTO audit_log (owner, at, actor, action, scope, key, lesson_id, before_version,
    after_version, before_digest, after_digest, reason, detail, prev_hash, hash)
VALUES (%(owner)s, %(at)s::timestamptz, %(actor)s, %(action)s, %(scope)s, %(key)s,
    %(lesson_id)s::uuid, %(before_version)s, %(after_version)s, %(before_digest)s,
    %(after_digest)s, %(reason)s, %(detail)s::jsonb, %(prev_hash)s, %(hash)s);

-- name: append_audits
-- Append chained audit events, a batch given as one JSON array of rows, in the array's order
-- (id order is each owner's chain order).
INSERT INTO audit_log (owner, at, actor, action, scope, key, lesson_id, before_version,
    after_version, before_digest, after_digest, reason, detail, prev_hash, hash)
SELECT r.owner, r.at, r.actor, r.action, r.scope, r.key, r.lesson_id, r.before_version,
    r.after_version, r.before_digest, r.after_digest, r.reason, r.detail::jsonb, r.prev_hash,
    r.hash
FROM ROWS FROM (json_to_recordset(%(rows)s::json) AS (owner text, at timestamptz, actor text,
    action text, scope text, key text, lesson_id uuid, before_version integer,
    after_version integer, before_digest text, after_digest text, reason text, detail text,
    prev_hash text, hash text)) WITH ORDINALITY AS r
ORDER BY r.ordinality;

-- name: audit_events
-- Audit events of an owner, newest first, filtered by address and time.
SELECT * FROM audit_log
WHERE owner = ANY (%(owners)s)
  AND (%(scope)s::text IS NULL OR scope = %(scope)s::text)
  AND (%(key)s::text IS NULL OR key = %(key)s::text)
  AND (%(since)s::timestamptz IS NULL OR at >= %(since)s::timestamptz)
  AND (%(until)s::timestamptz IS NULL OR at < %(until)s::timestamptz)
  AND (%(after_id)s::bigint IS NULL OR id < %(after_id)s::bigint)
ORDER BY id DESC LIMIT %(limit)s;

-- name: audit_events_at
-- As audit_events, of one address (see the SQLite twin): seeks the index by address.
SELECT * FROM audit_log
WHERE owner = ANY (%(owners)s) AND scope = %(scope)s::text AND key = %(key)s::text
  AND (%(since)s::timestamptz IS NULL OR at >= %(since)s::timestamptz)
  AND (%(until)s::timestamptz IS NULL OR at < %(until)s::timestamptz)
  AND (%(after_id)s::bigint IS NULL OR id < %(after_id)s::bigint)
ORDER BY id DESC LIMIT %(limit)s;

-- name: audit_activity
-- Audit events of these owners since the start of a day (UTC), counted by day and action:
-- read from the per-day counters of migration 0030, one row per owner, day and action.
SELECT day, action, sum(events) AS n FROM audit_day_counts
WHERE owner = ANY (%(owners)s)
  AND day >= to_char(%(since)s::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD')
GROUP BY day, action;

-- name: recall_activity
-- Recalls of these owners since the start of a day (UTC), and the lessons they held, by day:
-- read from the per-day counters of migration 0037, one row per owner and day.
SELECT day, sum(recalls) AS recalls, sum(held) AS held FROM recall_day_counts
WHERE owner = ANY (%(owners)s)
  AND day >= to_char(%(since)s::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD')
GROUP BY day;

-- name: audit_chain
-- Every audit event of an owner in chain order.
SELECT * FROM audit_log WHERE owner = %(owner)s ORDER BY id;

-- name: audit_head
-- The head kept beside an owner's chain (its count and last hash), moved only by appends.
SELECT events, last_hash FROM audit_heads WHERE owner = %(owner)s
ORDER BY events DESC LIMIT 1;

-- name: insert_token
-- Store a new token (its hash, never the secret).
INSERT INTO tokens (id, principal, name, token_hash, prefix, permission, scopes, orgs,
    created_at, created_by, expires_at)
VALUES (%(id)s::uuid, %(principal)s, %(name)s, %(token_hash)s, %(prefix)s, %(permission)s,
    %(scopes)s::jsonb, %(orgs)s::jsonb, %(created_at)s::timestamptz, %(created_by)s,
    %(expires_at)s::timestamptz);

-- name: token_by_hash
-- The token presented by a caller, found through the definer function by its hash.
SELECT * FROM lorestore_token_by_hash(%(token_hash)s);

-- name: list_tokens
-- A principal's tokens, newest first.
SELECT * FROM tokens WHERE principal = %(principal)s ORDER BY created_at DESC, id;

-- name: revoke_token
-- Revoke a principal's live token.
UPDATE tokens SET revoked_at = %(at)s::timestamptz
WHERE principal = %(principal)s AND id = %(id)s::uuid AND revoked_at IS NULL;

-- name: touch_token
-- Remember when a token was last used.
UPDATE tokens SET last_used_at = %(at)s::timestamptz WHERE id = %(id)s::uuid;

-- name: set_actor
-- Bind this transaction to its actor; every policy reads it.
SELECT set_config('lorestore.actor', %(actor)s, true);

-- name: register_actor
-- Make sure the acting user exists as a principal.
SELECT lorestore_register_actor();

-- name: bindings_for
-- Every approved scope binding (the ones that route), with the principal's role in the
-- bound org (NULL: not a member).
SELECT b.org, b.pattern, m.role FROM scope_bindings AS b
LEFT JOIN memberships AS m ON m.org = b.org AND m.member = %(principal)s
WHERE b.approved_at IS NOT NULL;

-- name: memberships
-- The orgs a principal belongs to.
SELECT * FROM memberships WHERE member = %(principal)s ORDER BY org COLLATE "C";

-- name: org_members
-- The members of an org (visible to its members only).
SELECT * FROM memberships WHERE org = %(org)s ORDER BY member COLLATE "C";

-- name: create_org
-- Create an org owned by the acting user (definer function; the actor comes from the session).
SELECT lorestore_create_org(%(slug)s, %(name)s) AS created;

-- name: set_member
-- Add a member to an org, or change their role (org admins only, by policy).
INSERT INTO memberships (org, member, role, created_at)
VALUES (%(org)s, %(member)s, %(role)s, %(at)s::timestamptz)
ON CONFLICT (org, member) DO UPDATE SET role = excluded.role;

-- name: remove_member
-- Remove a member from an org (org admins only, by policy).
DELETE FROM memberships WHERE org = %(org)s AND member = %(member)s;

-- name: insert_invite
-- Record an invite (the code's hash, never the code).
-- The database's clock dates it, and its lifetime is the one asked for: accepting compares the
-- expiry with that same clock.
INSERT INTO invites (id, org, invitee, role, code_hash, created_by, created_at, expires_at)
VALUES (%(id)s::uuid, %(org)s, %(invitee)s, %(role)s, %(code_hash)s, %(created_by)s, now(),
    now() + (%(expires_at)s::timestamptz - %(created_at)s::timestamptz))
RETURNING expires_at;

-- name: org_invites
-- The invites of an org, oldest first (its admins only, by policy).
SELECT * FROM invites WHERE org = %(org)s ORDER BY created_at, id;

-- name: revoke_invite
-- Take back a pending invite (by policy: an org admin as itself; an owner invite, an owner).
UPDATE invites SET revoked_at = now(), revoked_by = %(by)s
WHERE org = %(org)s AND id = %(id)s::uuid AND accepted_at IS NULL AND revoked_at IS NULL;

-- name: accept_invite
-- Join through a live invite addressed to the acting user (definer function; the database's
-- clock decides whether it has expired).
SELECT lorestore_accept_invite(%(code_hash)s) AS org;

-- name: insert_binding
-- Route a scope pattern to an org; nothing when the pattern is bound already.
INSERT INTO scope_bindings (org, pattern, created_by, created_at, approved_at, approved_by)
VALUES (%(org)s, %(pattern)s, %(by)s, %(at)s::timestamptz,
    CASE WHEN %(approved)s THEN %(at)s::timestamptz END, CASE WHEN %(approved)s THEN %(by)s END)
ON CONFLICT DO NOTHING;

-- name: delete_binding
-- Remove a scope binding (org admins only, by policy).
DELETE FROM scope_bindings WHERE org = %(org)s AND pattern = %(pattern)s;

-- name: scopes_held_by_others
-- Whether a lesson of an owner other than the org and the actor sits at a scope a binding of
-- the pattern claims (a definer function: the app role sees no other tenant's lessons; it
-- derives the LIKE patterns itself and answers only while nobody outside the org holds
-- anything here; the actor comes from the session).
SELECT lorestore_scopes_held_by_others(%(org)s, %(pattern)s) AS held;

-- name: org_has_outsiders
-- Whether a user outside the org holds anything here (a lesson, a token, a membership).
SELECT lorestore_org_has_outsiders(%(org)s) AS outsiders;

-- name: pending_bindings
-- The scope bindings waiting for an operator's approval (they route nothing yet).
SELECT org, pattern, NULL::text AS role, created_by, created_at FROM scope_bindings
WHERE approved_at IS NULL ORDER BY created_at, pattern COLLATE "C";

-- name: binding_claims_held
-- Whether a lesson of an owner other than the org and the binding's creator sits at a scope
-- the pending binding claims (an operator's question, asked with a superuser's rights).
SELECT lorestore_claims_held(org, pattern, created_by) AS held FROM scope_bindings
WHERE org = %(org)s AND pattern = %(pattern)s AND approved_at IS NULL;

-- name: approve_binding
-- An operator approves a pending binding: from now on it routes its scopes.
UPDATE scope_bindings SET approved_at = %(at)s::timestamptz, approved_by = %(by)s
WHERE org = %(org)s AND pattern = %(pattern)s AND approved_at IS NULL;

-- name: reject_binding
-- An operator refuses a pending binding.
DELETE FROM scope_bindings WHERE org = %(org)s AND pattern = %(pattern)s AND approved_at IS NULL;

-- name: store_setting
-- A setting of the store as a whole (store_settings), such as the secret ids derive from.
SELECT value FROM store_settings WHERE name = %(name)s;

-- name: set_max_active
-- Set an owner's cap on active lessons (NULL: the store's default).
INSERT INTO owner_stats (owner, max_active) VALUES (%(owner)s, %(limit)s)
ON CONFLICT (owner) DO UPDATE SET max_active = excluded.max_active;

-- name: set_max_bytes
-- Set an owner's cap on stored bytes (NULL: the store's default).
INSERT INTO owner_stats (owner, max_bytes) VALUES (%(owner)s, %(limit)s)
ON CONFLICT (owner) DO UPDATE SET max_bytes = excluded.max_bytes;

-- name: set_default_caps
-- Set the caps of every owner without its own (NULL: no cap).
UPDATE cap_defaults SET max_active = %(max_active)s, max_bytes = %(max_bytes)s;

-- name: owner_caps
-- An owner's counters and own caps beside the store's defaults (no owner row: NULLs).
SELECT s.active_lessons, s.stored_bytes, s.max_active, s.max_bytes,
    d.max_active AS default_active, d.max_bytes AS default_bytes
FROM cap_defaults AS d LEFT JOIN owner_stats AS s ON s.owner = %(owner)s;

-- name: count_request
-- Count n requests (a lease, service/budget.py) against a token's fixed window; a new
-- window restarts the count.
INSERT INTO token_usage AS u (token_id, principal, window_start, requests)
VALUES (%(token_id)s::uuid, %(principal)s, %(window)s::timestamptz, %(n)s::integer)
ON CONFLICT (token_id) DO UPDATE SET
    requests = CASE WHEN u.window_start = excluded.window_start
        THEN u.requests + excluded.requests ELSE excluded.requests END,
    window_start = excluded.window_start
RETURNING requests;

-- name: purge_recall_log
-- Recall-log retention: erase an owner's entries recorded before the cutoff.
DELETE FROM recall_log WHERE owner = %(owner)s AND at < %(cutoff)s::timestamptz;

-- name: recall_by_text
-- Recall candidates that the task's words (:find, of :match's) match, over all the ladder's
-- rungs in one pass, with row keys from :since up to :before (a frequent word's window,
-- sql/lessons.py), best ts_rank_cd first (hits found by the definer function of migration
-- 0009, expired lessons included so that recall can hold them as expired). term_ranks: as in
-- search.
WITH words AS (
    -- each word of the expression as a query of its own, for its rank alone (core/rarity.py)
    SELECT array_agg(to_tsquery('english', lorestore_fold(w)) ORDER BY n) AS queries
    FROM unnest(string_to_array(%(match)s, ' | ')) WITH ORDINALITY AS u (w, n)
)
SELECT l.*, hit.score::float8 AS score, l.source ->> 'agent' AS source_agent,
    l.source ->> 'author' AS source_author, l.source ->> 'commit' AS source_commit,
    ARRAY(SELECT ts_rank_cd(t.search, q)::float8 FROM unnest(words.queries) WITH ORDINALITY
          AS u (q, n) ORDER BY n) AS term_ranks
FROM lorestore_search_hits(to_tsquery('english', lorestore_fold(%(find)s)), %(owners)s::text[],
         %(scopes)s::text[], '-infinity'::timestamptz, '[]'::jsonb, %(limit)s, %(since)s,
         %(before)s) AS hit
JOIN lesson_rows AS l ON l.pk = hit.pk
JOIN lessons AS t ON t.pk = hit.pk
CROSS JOIN words
ORDER BY hit.score DESC, l.pk;

-- name: count_recall_rungs
-- The active, not rejected lessons of each rung (in the ladder's order), counted up to a cap:
-- whether recall's candidates left some of a rung unweighed, at the cost of at most cap rows
-- a rung.
SELECT (SELECT count(*) FROM (
            SELECT 1 FROM lessons AS x
            WHERE x.owner = rung.owner AND x.scope = rung.scope AND x.status = 'active'
              AND x.trust <> 'rejected'
            LIMIT %(cap)s) AS capped) AS n
FROM unnest(%(owners)s::text[], %(scopes)s::text[]) WITH ORDINALITY AS rung (owner, scope, i)
ORDER BY rung.i;

-- name: recall_pages
-- Recall candidates of every rung at once, in the ladder's order: each one's newest served (or
-- expired) lessons, then its newest verified and corroborated ones (a lesson may come twice;
-- recall keeps the first).
SELECT l.*, 0.0::float8 AS score, l.source ->> 'agent' AS source_agent,
    l.source ->> 'author' AS source_author, l.source ->> 'commit' AS source_commit
FROM unnest(%(owners)s::text[], %(scopes)s::text[]) WITH ORDINALITY AS rung (owner, scope, i)
CROSS JOIN LATERAL (
    (SELECT *, 0 AS page FROM lesson_rows AS x
     WHERE x.owner = rung.owner AND x.scope = rung.scope AND x.status = 'active'
       AND x.trust <> 'rejected'
     ORDER BY x.updated_at DESC, x.pk DESC
     LIMIT %(limit)s)
    UNION ALL
    (SELECT *, 1 AS page FROM lesson_rows AS x
     WHERE x.owner = rung.owner AND x.scope = rung.scope AND x.status = 'active'
       AND x.trust IN ('verified', 'corroborated')
     ORDER BY x.updated_at DESC, x.pk DESC
     LIMIT %(limit)s)
) AS l
ORDER BY rung.i, l.page, l.updated_at DESC, l.pk DESC;

-- name: insert_recall
-- Log one recall decision.
INSERT INTO recall_log (recall_id, owner, at, actor, context, offered, held)
VALUES (%(recall_id)s::uuid, %(owner)s, %(at)s::timestamptz, %(actor)s, %(context)s::jsonb,
    %(offered)s::jsonb, %(held)s::jsonb);

-- name: recent_recalls
-- Logged recall decisions of these owners since a time, newest first: each owner's newest
-- from recall_log_newest, walked backwards up to the page's size (migration 0042), merged.
SELECT r.* FROM (SELECT DISTINCT unnest(%(owners)s::text[]) AS owner) AS o
CROSS JOIN LATERAL (
    SELECT * FROM recall_log AS x
    WHERE x.owner = o.owner AND x.at >= %(since)s::timestamptz
    ORDER BY x.at DESC, x.recall_id DESC
    LIMIT %(limit)s) AS r
ORDER BY r.at DESC, r.recall_id DESC
LIMIT %(limit)s;

-- name: recalls_of_lesson
-- As recent_recalls, only those that offered or held a lesson: an element naming it, found
-- through migration 0031's GIN indexes on the two lists by a definer function (under RLS
-- the containment test could not use them, migration 0036), the rows then read under RLS.
SELECT r.* FROM lorestore_recalls_naming(%(lesson)s::jsonb, %(owners)s::text[],
         %(since)s::timestamptz, %(limit)s) AS hit
JOIN recall_log AS r ON r.recall_id = hit.recall_id
ORDER BY r.at DESC, r.recall_id DESC;

-- name: get_recall
-- One logged recall decision of these owners.
SELECT * FROM recall_log WHERE recall_id = %(recall_id)s::uuid AND owner = ANY (%(owners)s);

-- name: scope_policies
-- Revision and review policies of an owner for the given scopes and its default (*).
SELECT * FROM scope_policies WHERE owner = %(owner)s AND scope = ANY (%(scopes)s);

-- name: set_policy
-- Set a scope's (or the owner default's) revision and review policy.
INSERT INTO scope_policies (owner, scope, revision_policy, require_review, updated_at, updated_by)
VALUES (%(owner)s, %(scope)s, %(revision_policy)s, %(require_review)s::int::boolean,
    %(at)s::timestamptz, %(by)s)
ON CONFLICT (owner, scope) DO UPDATE SET revision_policy = excluded.revision_policy,
    require_review = excluded.require_review, updated_at = excluded.updated_at,
    updated_by = excluded.updated_by;

-- name: export_lessons
-- A page of the given owners' lessons in any state, by stable id (never the nil UUID).
SELECT * FROM lesson_rows
WHERE owner = ANY (%(owners)s)
  AND id > coalesce(%(after_id)s::uuid, '00000000-0000-0000-0000-000000000000')
ORDER BY id LIMIT %(limit)s;

-- name: versions_of
-- Every version of a page of lessons, oldest first, with the lesson's id (lorestore export).
SELECT v.*, l.id AS lesson_id
FROM lesson_versions AS v JOIN lessons AS l ON l.pk = v.lesson_pk
WHERE v.lesson_pk = ANY (%(pks)s)
ORDER BY v.lesson_pk, v.version;

-- name: import_lessons
-- Add imported lessons under their own ids, a batch given as one JSON array of rows, in the
-- array's order; a lesson whose id or address is taken (by the store or by one earlier in the
-- batch) is skipped. The pk of each one added, by id.
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
ORDER BY r.ordinality
ON CONFLICT DO NOTHING
RETURNING id, pk;

-- name: insert_served_versions
-- Record for each of these lessons the version it serves, accepted, by the actor.
INSERT INTO lesson_versions (owner, lesson_pk, version, state, value, value_digest, tags,
    valid_from, valid_to, recorded_at, accepted_at, actor, source)
SELECT owner, pk, version, 'accepted', value, value_digest, tags, valid_from, valid_to,
    recorded_at, NULL, %(actor)s, source
FROM lessons WHERE pk = ANY (%(pks)s) ORDER BY pk;

-- name: lookalike_keys
-- Keys of a scope that may look like a key of this skeleton: the one equal to it in ASCII
-- case, and every key with a character outside ASCII, each kind from its own index, by a
-- definer function (migration 0040: under RLS neither index is usable).
SELECT key FROM lorestore_lookalike_keys(%(owner)s, %(scope)s, %(skeleton)s);

-- name: rejected_values
-- The values an owner's live tombstones at these scopes hold, with their lessons' keys: a
-- rejected lesson's, or a rejected revision's (a version of the digest the tombstone holds).
SELECT l.key, v.value FROM tombstones AS t
JOIN lessons AS l ON l.id = t.lesson_id AND l.owner = t.owner
JOIN lesson_versions AS v ON v.lesson_pk = l.pk AND v.value_digest = t.value_digest
WHERE t.owner = %(owner)s AND t.lifted_at IS NULL AND t.scope = ANY (%(scopes)s);

-- name: live_tombstones
-- An owner's live tombstones of any of these digests, at any scope, oldest first.
SELECT * FROM tombstones
WHERE owner = %(owner)s AND lifted_at IS NULL AND value_digest = ANY (%(digests)s)
ORDER BY created_at;

-- name: lessons_by_ids
-- An owner's lessons with any of these ids.
SELECT * FROM lesson_rows WHERE owner = %(owner)s AND id = ANY (%(ids)s::uuid[]);

-- name: export_tombstones
-- A page of the given owners' tombstones, lifted ones included, ordered by id.
SELECT * FROM tombstones
WHERE owner = ANY (%(owners)s)
  AND id > coalesce(%(after_id)s::uuid, '00000000-0000-0000-0000-000000000000')
ORDER BY id LIMIT %(limit)s;

-- name: tombstone_by_id
-- One tombstone of an owner by id, live or lifted.
SELECT * FROM tombstones WHERE owner = %(owner)s AND id = %(id)s::uuid;

-- name: import_tombstone
-- Add an imported tombstone as it stands (live or lifted); nothing when its id is taken.
INSERT INTO tombstones (id, owner, scope, value_digest, reason, actor, created_at, lesson_id,
    lifted_at, lifted_by, lift_reason, ext)
VALUES (%(id)s::uuid, %(owner)s, %(scope)s, %(value_digest)s, %(reason)s, %(actor)s,
    %(created_at)s::timestamptz, %(lesson_id)s::uuid, %(lifted_at)s::timestamptz,
    %(lifted_by)s, %(lift_reason)s, %(ext)s::jsonb)
ON CONFLICT DO NOTHING;

-- name: export_policies
-- The given owners' scope policies, ordered by owner and scope (bytewise, as on SQLite).
SELECT * FROM scope_policies
WHERE owner = ANY (%(owners)s)
ORDER BY owner COLLATE "C", scope COLLATE "C";

-- name: import_policy
-- Add an imported scope policy; nothing when the owner has one for the scope already.
INSERT INTO scope_policies (owner, scope, revision_policy, require_review, updated_at,
    updated_by, ext)
VALUES (%(owner)s, %(scope)s, %(revision_policy)s, %(require_review)s::int::boolean,
    %(updated_at)s::timestamptz, %(updated_by)s, %(ext)s::jsonb)
ON CONFLICT DO NOTHING;

-- name: import_foreign
-- Keep an imported record of an unknown type; nothing when it is kept already.
INSERT INTO foreign_records (owner, digest, type, scope, record, imported_at, imported_by)
VALUES (%(owner)s, %(digest)s, %(type)s, %(scope)s, %(record)s::jsonb,
    %(imported_at)s::timestamptz, %(imported_by)s)
ON CONFLICT DO NOTHING;

-- name: export_foreign
-- A page of the given owners' kept records of unknown types, by (owner, digest), bytewise.
SELECT * FROM foreign_records
WHERE owner = ANY (%(owners)s)
  AND (%(after_owner)s::text IS NULL OR owner > %(after_owner)s COLLATE "C"
       OR (owner = %(after_owner)s AND digest > %(after_digest)s COLLATE "C"))
ORDER BY owner COLLATE "C", digest COLLATE "C" LIMIT %(limit)s;

-- name: due_owners
-- Owners with something due for the maintenance sweeps (definer function: owner ids only).
SELECT * FROM lorestore_due_owners(%(now)s::timestamptz, %(archived_cutoff)s::timestamptz,
    %(recall_cutoff)s::timestamptz) AS owner;

-- name: add_project_repo
-- Declare (or import) a repository part of an owner's project; nothing when it already is.
INSERT INTO project_repos (owner, project, repo, added_at, added_by, ext)
VALUES (%(owner)s, %(project)s, %(repo)s, %(at)s::timestamptz, %(by)s, %(ext)s::jsonb)
ON CONFLICT DO NOTHING;

-- name: remove_project_repo
-- Take one repository out of an owner's project.
DELETE FROM project_repos
WHERE owner = %(owner)s AND project = %(project)s AND repo = %(repo)s;

-- name: remove_project
-- Take every repository out of an owner's project (the project is gone); the ones removed.
DELETE FROM project_repos WHERE owner = %(owner)s AND project = %(project)s RETURNING repo;

-- name: project_repos
-- The project declarations of the given owners, by owner, project and repository (bytewise,
-- as on SQLite).
SELECT * FROM project_repos
WHERE owner = ANY (%(owners)s)
ORDER BY owner COLLATE "C", project COLLATE "C", repo COLLATE "C";

-- name: projects_of_repo
-- The given owners' projects that hold a repository (recall's project rungs), by name.
SELECT * FROM project_repos
WHERE repo = %(repo)s AND owner = ANY (%(owners)s)
ORDER BY project COLLATE "C", owner COLLATE "C";
-- name: put_vector
-- Keep a lesson's vector (replacing another model's or an older text's), unless the same
-- vector of the same model is there already: a changed row gets this transaction's id as its
-- generation, which every process caching the rung then reads again.
INSERT INTO lesson_vectors (owner, lesson_pk, lesson_id, scope, model, model_version, vector)
VALUES (%(owner)s, %(lesson_pk)s, %(lesson_id)s::uuid, %(scope)s, %(model)s, %(model_version)s,
    %(vector)s)
ON CONFLICT (owner, lesson_pk) DO UPDATE
SET model = excluded.model, model_version = excluded.model_version, vector = excluded.vector,
    generation = excluded.generation
WHERE (lesson_vectors.model, lesson_vectors.model_version, lesson_vectors.vector)
      IS DISTINCT FROM (excluded.model, excluded.model_version, excluded.vector);

-- name: vector_mark
-- The oldest transaction still running: every vector written after this read has a
-- generation at or above it (a writer that commits late included).
SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS mark;

-- name: rung_vectors
-- A rung's vectors of the model written at or after a generation (a cache's increment).
SELECT lesson_id::text AS id, vector FROM lesson_vectors
WHERE owner = %(owner)s AND scope = %(scope)s AND generation >= %(since)s
  AND model = %(model)s AND model_version = %(model_version)s;

-- name: recall_by_ids
-- Recall candidates the semantic pass found, by id, under recall_pages' conditions.
SELECT *, 0.0::float8 AS score, source ->> 'agent' AS source_agent,
    source ->> 'author' AS source_author, source ->> 'commit' AS source_commit
FROM lesson_rows
WHERE id = ANY (%(ids)s::uuid[]) AND owner = ANY (%(owners)s::text[])
  AND status = 'active' AND trust <> 'rejected';

-- name: lessons_to_embed
-- Lessons (any status) with no vector of the model, or another model's, after a pk: what
-- `lorestore reindex` embeds, a page at a time.
SELECT l.pk, l.id::text AS id, l.owner, l.scope, l.tags, l.value
FROM lessons AS l
LEFT JOIN lesson_vectors AS v ON v.owner = l.owner AND v.lesson_pk = l.pk
WHERE l.pk > %(after)s
  AND (v.lesson_pk IS NULL OR v.model <> %(model)s OR v.model_version <> %(model_version)s)
ORDER BY l.pk
LIMIT %(limit)s;

-- name: count_lessons_to_embed
-- How many lessons lessons_to_embed would page through.
SELECT count(*) AS n
FROM lessons AS l
LEFT JOIN lesson_vectors AS v ON v.owner = l.owner AND v.lesson_pk = l.pk
WHERE v.lesson_pk IS NULL OR v.model <> %(model)s OR v.model_version <> %(model_version)s;
