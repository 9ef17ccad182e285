-- 0040_index_lookalike_keys.sql
--
-- Why: a write at a new key first asks whether the key looks like another key of its scope
--   (lookalike_keys, service/corrections.py): the key equal to it in ASCII case, and every key
--   holding a character outside ASCII (compared by skeleton in Python). The query read every
--   key of the scope to find those few: 22-51 ms for a write into a scope of 56k lessons at
--   100k, a cost that grew with the scope (SQLite: its migration 0033).
-- What changes:
--   - two indexes find the two kinds of key: lessons_key_folded on (owner, scope,
--     lower(key)), and lessons_key_non_ascii on (owner, scope), partial, over the keys with a
--     character outside ASCII only (`key ~ '[^[:ascii:]]'`, which the planner estimates from
--     the column's statistics, where it could not estimate the length-against-octet-length
--     test of the old query: the same keys in a UTF-8 database);
--   - lorestore_lookalike_keys(owner, scope, skeleton) reads them. Under row-level security
--     neither index is usable: lower() and ~ are not leakproof, so the policy's test runs
--     first, on every key of the scope. The function, as lorestore_search_hits, runs as
--     lorestore_definer and applies the tenancy itself.
-- Tenancy: the function keeps to the owners of the session's actor (lorestore_owners()),
--   whatever owner it is asked for; schema-qualified names, pg_temp last.
-- Compatibility: the previous release's query still runs (reading the scope's keys, as
--   before), though that release refuses a schema with migrations it does not know. A write
--   maintains one more index entry, two for a key outside ASCII.
-- Verify: the function scans both indexes and not the scope's, and returns nothing of another
--   tenant's (tests/storage/test_lookalike_plans.py).

CREATE INDEX lessons_key_folded ON lessons (owner, scope, lower(key));
CREATE INDEX lessons_key_non_ascii ON lessons (owner, scope) WHERE key ~ '[^[:ascii:]]';

CREATE FUNCTION lorestore_lookalike_keys(of_owner text, in_scope text, skeleton text)
RETURNS TABLE (key text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, public, pg_temp
    AS $$
DECLARE
    readable text[] := public.lorestore_owners();
BEGIN
    RETURN QUERY
        SELECT l.key FROM public.lessons AS l
        WHERE l.owner = of_owner AND l.owner = ANY (readable) AND l.scope = in_scope
          AND (lower(l.key) = skeleton OR l.key ~ '[^[:ascii:]]');
END $$;

ALTER FUNCTION lorestore_lookalike_keys(text, text, text) OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION lorestore_lookalike_keys(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lorestore_lookalike_keys(text, text, text) TO lorestore_app;
