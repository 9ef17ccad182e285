-- 0033_index_lookalike_keys.sql
--
-- Why: a write at a new key first asks whether the key looks like another key of its scope
--   (lookalike_keys, service/corrections.py): the key equal to it in ASCII case, and every key
--   holding a character outside ASCII (compared by skeleton in Python). The query read every
--   key of the scope to find those few: 10.6 ms a write into a scope of 56k lessons at 100k
--   (0.5-0.9 ms into small scopes), a cost that grew with the scope.
-- What changes: two indexes find the two kinds of key directly:
--   - lessons_key_folded on (owner, scope, lower(key));
--   - lessons_key_non_ascii on (owner, scope), partial: only the keys with a character
--     outside ASCII (their length in bytes is not their length in characters).
--   lookalike_keys asks for each kind in its own SELECT, joined by UNION, each naming its
--   index (INDEXED BY): SQLite uses no index for an OR of the two, and with no statistics
--   (the store keeps none) it walked the scope's keys in lessons_address instead.
-- Tenancy: none (no row-level security in SQLite); both indexes lead with owner.
-- Compatibility: the previous release's query still runs (reading the scope's keys, as
--   before). A write maintains one more index entry, two for a key outside ASCII.
-- Verify: EXPLAIN QUERY PLAN of lookalike_keys names both indexes
--   (tests/storage/test_lookalike_plans.py).

CREATE INDEX lessons_key_folded ON lessons (owner, scope, lower(key));
CREATE INDEX lessons_key_non_ascii ON lessons (owner, scope)
    WHERE length(key) <> length(CAST(key AS BLOB));
