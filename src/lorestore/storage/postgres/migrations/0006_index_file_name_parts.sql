-- 0006_index_file_name_parts.sql
--
-- Why: PostgreSQL's default text-search parser keeps a file name or path
--   (`tests/conftest.py`, `next.config.js`, `.terraform.lock.hcl`) as one `file` lexeme, so
--   a search for `conftest.py` or `conftest` found nothing in a lesson that wrote
--   `tests/conftest.py`, while the embedded store found it (FTS5's unicode61 tokenizer splits
--   on '.' and '/'). Agents search by file name all the time; the retrieval eval
--   (docs/evals.md) measured the change: PostgreSQL search MRR 0.876 -> 0.892.
-- What changes: `lessons.search` gains a fourth part at the lowest weight, D: the value with
--   every '.' and '/' between word characters replaced by a space, so each part of a file
--   name is a lexeme of its own while the whole name stays at weight C. The generated column
--   is dropped and added back with the new expression (ALTER COLUMN ... SET EXPRESSION needs
--   PostgreSQL 17), which rewrites the table once, and the GIN index is rebuilt.
-- Tenancy: none. No policy reads the column; the table keeps its grants and forced RLS.
-- Compatibility: the column keeps its name and type and is still generated, so code that
--   ran against 0005 runs unchanged (it never writes `search`); only rankings move.
-- Verify: `SELECT search @@ to_tsquery('english', 'conftest') FROM lessons
--   WHERE value LIKE '%tests/conftest.py%'` is true; `\d lessons` lists lessons_search (gin).

ALTER TABLE lessons DROP COLUMN search;

ALTER TABLE lessons ADD COLUMN search tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', key), 'A')
    || setweight(to_tsvector('english', coalesce(tags::text, '')), 'B')
    || setweight(to_tsvector('english', value), 'C')
    || setweight(to_tsvector('english', regexp_replace(value, '(\w)[./]+(?=\w)', '\1 ', 'g')), 'D')
) STORED;

CREATE INDEX lessons_search ON lessons USING gin (search);
