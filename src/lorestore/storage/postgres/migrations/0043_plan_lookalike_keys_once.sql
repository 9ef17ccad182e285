-- 0043_plan_lookalike_keys_once.sql
--
-- Why: lorestore_lookalike_keys (migration 0040), which every write at a new key calls, was
--   planned again at every call: its query's generic plan is estimated dearer than the custom
--   ones (its parameters give the planner nothing to narrow by), so PostgreSQL's plan cache
--   kept making custom plans, 0.2-0.3 ms of planning for a query that runs in 0.02 ms: the
--   call took 0.33 ms as the app role, where a read of one row takes 0.15 ms.
-- What changes: the function keeps one generic plan (plan_cache_mode force_generic_plan, set
--   on the function alone): the same two index scans, ORed, whatever the arguments.
-- Tenancy: unchanged; the function reads as before, for the owners lorestore_owners() names.
-- Compatibility: the previous release's code calls the same function, though that release
--   refuses a schema with migrations it does not know.
-- Verify: the function carries the setting, and eight calls in one transaction as
--   lorestore_app walk both indexes each time (tests/storage/test_lookalike_plans.py).

ALTER FUNCTION lorestore_lookalike_keys(text, text, text)
    SET plan_cache_mode = force_generic_plan;
