-- 0012_search_parity.sql
--
-- Why: the same search found different lessons on the two backends (found by running one
--   random sequence of operations against both and comparing). FTS5's unicode61 tokenizer
--   splits every file name, path, address and version at its punctuation, folds accents
--   (remove_diacritics 2) and the final sigma; PostgreSQL's parser kept `tests/conftest.py`
--   in a key or tag, `~/.bashrc` and `/etc/hosts` anywhere as one lexeme, and indexed `café`
--   and `σοφος` as written, so `conftest`, `bashrc`, `etc`, `cafe` and `σοφοσ` found nothing
--   there. And lessons of equal score came back newest first here, oldest first there, so a
--   `limit` kept different ones.
-- What changes: lorestore_fold(text) (accents removed, final sigma made the ordinary sigma,
--   the rest as written) is applied to every part of `lessons.search` and, by the queries of
--   this release, to the query; the lowest-weight part (D) now holds the key, tags and value
--   with '.', '/', '~', ':', '@' and '\' read as spaces (0006 split only the value, and only
--   between word characters). Holding only the parts of such words at D was tried and ranked
--   worse in the retrieval eval (PostgreSQL search MRR 0.857 against 0.862; docs/evals.md).
--   The column is dropped and added back (a rewrite of the table) and its GIN index rebuilt.
--   lorestore_search_hits breaks ties oldest first, as FTS5's rank order does (the embedded
--   store cannot do the opposite without ranking and sorting every match): PostgreSQL search
--   MRR 0.869 -> 0.862 in the retrieval eval, where ts_rank_cd ties are frequent.
-- Tenancy: none. No policy reads the column; the table keeps its grants and forced RLS;
--   lorestore_search_hits keeps its owner, grants and tenancy check.
-- Compatibility: columns keep their names and types. Code of the previous release still
--   runs, but its queries do not fold the query text, so accented words would not match.
-- Verify: as lorestore_app, a lesson keyed `tests/conftest.py` is found by `conftest`, one
--   reading `edit ~/.bashrc` by `bashrc`, one reading `café` by `cafe`.

CREATE FUNCTION lorestore_fold(raw text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
        SELECT normalize(
            translate(regexp_replace(normalize(raw, NFD), '[\u0300-\u036f]', '', 'g'), 'ς', 'σ'),
            NFC)
    $$;

ALTER TABLE lessons DROP COLUMN search;

ALTER TABLE lessons ADD COLUMN search tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', lorestore_fold(key)), 'A')
    || setweight(to_tsvector('english', lorestore_fold(coalesce(tags::text, ''))), 'B')
    || setweight(to_tsvector('english', lorestore_fold(value)), 'C')
    || setweight(to_tsvector('english', regexp_replace(
           lorestore_fold(key || ' ' || coalesce(tags::text, '') || ' ' || value),
           '[./~:@\\]+', ' ', 'g')), 'D')
) STORED;

CREATE INDEX lessons_search ON lessons USING gin (search);

-- Ties of equal score oldest first, as FTS5's rank order gives them on the embedded store.
CREATE OR REPLACE FUNCTION lorestore_search_hits(
    query tsquery, owners text[], scopes text[], at timestamptz, wanted_tags jsonb,
    max_hits integer
) RETURNS TABLE (pk bigint, score real)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
    AS $$
        SELECT l.pk, ts_rank_cd(l.search, query) AS score
        FROM lessons AS l
        WHERE l.search @@ query
          AND l.owner = ANY (lorestore_owners())
          AND (l.owner, l.scope) IN (SELECT * FROM unnest(owners, scopes))
          AND l.status = 'active' AND l.trust <> 'rejected'
          AND (l.expires_at IS NULL OR l.expires_at > at)
          AND l.tags @> wanted_tags
        ORDER BY score DESC, l.pk
        LIMIT max_hits
    $$;
