-- 0027_create_lesson_vectors.sql
--
-- Why: hybrid retrieval (issue 21). Recall fuses the full-text rank with the cosine similarity
--   of a small local embedding model (the optional extra lorestore[semantic]), so a task
--   phrased in other words than a lesson still finds it. The vectors are kept in the store,
--   beside the lessons they were made from, so they are computed once per version, not per
--   recall, and every server process shares them. pgvector is not required: the vectors are
--   compact bytes and the similarity is computed in the process, over a cache of the ladder's
--   vectors (semantic/index.py).
-- What changes: lesson_vectors, one row per lesson (the served version's tags and
--   text): owner, lesson_pk (ON DELETE CASCADE: a hard delete erases the vector with the text
--   it was made from), lesson_id (what recall names a candidate by: a rung's vectors are read
--   without touching the lessons' rows), scope (recall reads a rung's vectors by owner and
--   scope), the model's
--   name and version (a model change is seen and re-embedded by `lorestore reindex`), the
--   vector (256 int8 components: 256 bytes) and a generation: the id of the transaction that
--   wrote it. A process caching a rung's vectors remembers the oldest transaction still
--   running when it last read (pg_snapshot_xmin) and next reads only rows written by that
--   transaction or a later one, so a writer that commits late is never skipped.
-- Tenancy: keyed on (owner, lesson_pk); row-level security forced; lorestore_app reads the
--   rows of the owners it reads and inserts or updates those of the owners it may write (the
--   policies of lesson_sessions); no DELETE or TRUNCATE grant (a lesson's delete cascades).
--   The owner cannot change (the trigger of migration 0018).
-- Compatibility: the previous release never reads the table; a lesson it writes has no
--   vector until the next write of it or `lorestore reindex`, and recall finds it by its words
--   meanwhile.
-- Verify: as lorestore_app with an actor bound, a write with the extra installed leaves one
--   row in `SELECT owner, scope, model, length(vector) FROM lesson_vectors` (256 bytes);
--   another actor's SELECT shows none of it; `DELETE FROM lesson_vectors` is refused.

CREATE TABLE public.lesson_vectors (
    owner         text NOT NULL,
    lesson_pk     bigint NOT NULL REFERENCES public.lessons (pk) ON DELETE CASCADE,
    lesson_id     uuid NOT NULL,
    scope         text NOT NULL,
    model         text NOT NULL,
    model_version text NOT NULL,
    vector        bytea NOT NULL,
    generation    bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
    PRIMARY KEY (owner, lesson_pk)
);

CREATE INDEX lesson_vectors_rung ON public.lesson_vectors (owner, scope, generation);
-- ON DELETE CASCADE looks the lesson's vector up by lesson_pk alone.
CREATE INDEX lesson_vectors_pk ON public.lesson_vectors (lesson_pk);

ALTER TABLE public.lesson_vectors ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.lesson_vectors FORCE ROW LEVEL SECURITY;
CREATE POLICY lesson_vectors_read ON public.lesson_vectors FOR SELECT
    USING (owner = ANY ((SELECT lorestore_owners())::text[]));
CREATE POLICY lesson_vectors_insert ON public.lesson_vectors FOR INSERT
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[]));
CREATE POLICY lesson_vectors_update ON public.lesson_vectors FOR UPDATE
    USING (owner = ANY ((SELECT lorestore_writable_owners())::text[]))
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[]));
GRANT SELECT, INSERT, UPDATE ON public.lesson_vectors TO lorestore_app;

CREATE TRIGGER lesson_vectors_owner_frozen BEFORE UPDATE OF owner ON public.lesson_vectors
    FOR EACH ROW WHEN (OLD.owner IS DISTINCT FROM NEW.owner)
    EXECUTE FUNCTION lorestore_tenant_key_frozen('owner');
