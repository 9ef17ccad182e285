-- 0043_plan_lookalike_keys_once.sql
--
-- Why: lorestore_lookalike_keys (migration 0040), which every write at a new key calls, was
--   planned again at every call: its query's generic plan is estimated dearer than the custom
--   ones (its parameters give the planner nothing to narrow by), so PostgreSQL's plan cache
--   kept making custom plans, 0.2-0.3 ms of planning for a query that runs in 0.02 ms. A
--   write's call took 0.33 ms where a read of one row takes 0.15 ms, about a sixth of a created
--   lesson's time on the server.
-- What changes: the function keeps one generic plan (plan_cache_mode force_generic_plan, set
--   on the function alone): the same two index scans, ORed, whatever the arguments.
-- Tenancy: unchanged; the function reads as before, for the owners lorestore_owners() names.
-- Compatibility: the previous release's code calls the same function, though that release
--   refuses a schema with migrations it does not know.
-- Verify: as lorestore_app, the function's query is planned once per connection, not per call
--   (tests/storage/test_lookalike_plans.py).

ALTER FUNCTION lorestore_lookalike_keys(text, text, text)
    SET plan_cache_mode = force_generic_plan;
