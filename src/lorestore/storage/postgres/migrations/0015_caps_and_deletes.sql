-- 0015_caps_and_deletes.sql
--
-- Why: two rules the service keeps were not kept by the database. Caps on active lessons
--   are an operator's (`lorestore db cap` with a superuser URL), yet the app role could
--   raise its own through raw SQL; and a hard delete in an org needs its owner or admin
--   role, yet the lessons delete policy let any member delete.
-- What changes: lorestore_app keeps INSERT (owner, active_lessons) and UPDATE
--   (active_lessons) on owner_stats, which the counting trigger needs, and loses them on
--   max_active. lessons_delete allows an owner's own rows and the rows of the orgs the
--   actor administers (a maintenance sweep acts as the owner itself).
-- Tenancy: narrows what the app role may do; nothing becomes visible that was not.
-- Compatibility: the service of this release never sets a cap as the app role and checks
--   the delete rule first, so its calls are unchanged.
-- Verify: as lorestore_app, `UPDATE owner_stats SET max_active = 1000000` fails with
--   permission denied; a member's `DELETE FROM lessons WHERE owner = 'org:acme'` deletes 0
--   rows.

REVOKE INSERT, UPDATE ON owner_stats FROM lorestore_app;
GRANT INSERT (owner, active_lessons), UPDATE (active_lessons) ON owner_stats TO lorestore_app;

ALTER POLICY lessons_delete ON lessons
    USING (owner = lorestore_actor() OR owner = ANY ((SELECT lorestore_admin_orgs())::text[]));
