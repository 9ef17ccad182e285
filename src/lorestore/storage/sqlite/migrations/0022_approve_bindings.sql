-- 0022_approve_bindings.sql
--
-- Why: first come, first served: any user could create an org and bind `repo::victimco/*`
--   before the real owners wrote there, and then their writes were refused. PostgreSQL's
--   migration of the same name says why and how in full; a team sharing one machine through
--   `lorestore serve` meets the same squatter.
-- What changes: scope_bindings gain approved_at and approved_by; only an approved binding
--   routes a scope (bindings stored before this migration are approved as they were). The
--   service approves a binding when it is made if it lies within one the org holds already or
--   if no user outside the org holds anything here; any other waits for `lorestore db
--   approve-binding` on this file.
-- Tenancy: the embedded store's boundary is the service.
-- Compatibility: `org bind` of this release answers `pending` where an operator must approve.
-- Verify: `SELECT org, pattern, approved_at FROM scope_bindings` shows pending requests with
--   approved_at NULL.

ALTER TABLE scope_bindings ADD COLUMN approved_at TEXT;
ALTER TABLE scope_bindings ADD COLUMN approved_by TEXT;
UPDATE scope_bindings SET approved_at = created_at, approved_by = created_by;
