-- 0026_create_project_repos.sql
--
-- Why: a lesson written at project::NAME reached a task only when its caller named the
--   project, and nothing did: the CLI, the stdio server and the hooks fill repo, branch and
--   commit from git, never a project. A person now declares which repositories form a
--   project (`lorestore project add NAME OWNER/REPO...`), and recall derives the project
--   rung(s) of a task from its repository.
-- What changes: the table project_repos, one row per repository of a project of an owner
--   (a project exists while it has a repository), with the unknown fields an import kept
--   (ext, as tombstones and scope policies keep theirs; not counted in the owner's stored
--   bytes: only a reviewer imports a project, and a declaration is a few hundred bytes), and
--   an index by repository, the lookup recall makes on every call.
-- Tenancy: keyed on owner first, like every tenant table. The embedded store has no
--   row-level security; the service reads only the owners the actor may read and writes
--   only the owner a project's scope routes to.
-- Compatibility: new table; code of the previous release never reads it, and recalls as
--   before (without the derived project rungs).
-- Verify: `lorestore project add billing acme/app` then
--   `SELECT * FROM project_repos` shows (user:..., billing, acme/app, ...).

CREATE TABLE project_repos (
    owner       TEXT NOT NULL REFERENCES principals (id),
    project     TEXT NOT NULL,               -- the NAME of project::NAME, lower case
    repo        TEXT NOT NULL,               -- OWNER/NAME, lower case, as repo:: scopes hold it
    added_at    TEXT NOT NULL,
    added_by    TEXT NOT NULL,
    ext         TEXT NOT NULL DEFAULT '{}',    -- an import's unknown fields, re-exported
    PRIMARY KEY (owner, project, repo)
);

CREATE INDEX project_repos_by_repo ON project_repos (repo, owner);
