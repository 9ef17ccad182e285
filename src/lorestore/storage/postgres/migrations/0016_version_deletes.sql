-- 0016_version_deletes.sql
--
-- Why: migration 0015 narrowed the lessons delete policy to an owner's own rows and the
--   orgs the actor administers, but left lesson_versions' delete policy at "writable
--   owners": a plain member of an org could erase the org's version history in raw SQL.
-- What changes: versions_delete allows the same rows as lessons_delete. A hard delete of a
--   lesson removes its versions by the foreign key's cascade, which PostgreSQL runs as the
--   table's owner, so the service's deletes are unchanged.
-- Tenancy: narrows what the app role may do; nothing becomes visible that was not.
-- Compatibility: the service never deletes versions directly (only through the cascade).
-- Verify: as lorestore_app with a member actor, `DELETE FROM lesson_versions WHERE owner =
--   'org:acme'` deletes 0 rows; with the org's owner as actor it deletes them.

ALTER POLICY versions_delete ON lesson_versions
    USING (owner = lorestore_actor() OR owner = ANY ((SELECT lorestore_admin_orgs())::text[]));
