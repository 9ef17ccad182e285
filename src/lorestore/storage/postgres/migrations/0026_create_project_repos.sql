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
-- Tenancy: project_repos keys on owner first and has row-level security forced: the app
--   role reads the rows of the owners it may read (lorestore_owners(): itself and its orgs)
--   and inserts or deletes only those of the owners it may write. It has SELECT, INSERT and
--   DELETE, no UPDATE: a declaration is added or taken back, never moved to another owner.
--   Who may declare (the review permission, an org's member for an org's project) is the
--   service's rule; the policies keep another tenant's declarations out of reach whatever
--   the service asks.
-- Compatibility: new table; code of the previous release never reads it, and recalls as
--   before (without the derived project rungs).
-- Verify: as lorestore_app with an actor bound, `SELECT * FROM project_repos` shows that
--   actor's and its orgs' declarations only; `UPDATE project_repos SET owner = 'org:x'`
--   fails with permission denied.

CREATE TABLE project_repos (
    owner       text NOT NULL REFERENCES principals (id),
    project     text NOT NULL,               -- the NAME of project::NAME, lower case
    repo        text NOT NULL,               -- OWNER/NAME, lower case, as repo:: scopes hold it
    added_at    timestamptz NOT NULL,
    added_by    text NOT NULL,
    ext         jsonb NOT NULL DEFAULT '{}',   -- an import's unknown fields, re-exported
    PRIMARY KEY (owner, project, repo)
);

CREATE INDEX project_repos_by_repo ON project_repos (repo, owner);

ALTER TABLE project_repos ENABLE ROW LEVEL SECURITY;
ALTER TABLE project_repos FORCE ROW LEVEL SECURITY;
CREATE POLICY project_repos_read ON project_repos FOR SELECT
    USING (owner = ANY ((SELECT lorestore_owners())::text[]));
CREATE POLICY project_repos_insert ON project_repos FOR INSERT
    WITH CHECK (owner = ANY ((SELECT lorestore_writable_owners())::text[]));
CREATE POLICY project_repos_delete ON project_repos FOR DELETE
    USING (owner = ANY ((SELECT lorestore_writable_owners())::text[]));
GRANT SELECT, INSERT, DELETE ON project_repos TO lorestore_app;
