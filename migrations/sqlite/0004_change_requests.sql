-- The pull/merge requests autofix opened, so a comment, a review or a check run on one finds the
-- issue (and so the job key) it belongs to without asking the forge.
CREATE TABLE IF NOT EXISTS change_requests (
    forge TEXT NOT NULL,
    repo TEXT NOT NULL,
    number INTEGER NOT NULL,
    issue_number INTEGER NOT NULL,
    branch TEXT NOT NULL,
    url TEXT NOT NULL,
    job_id INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    -- CI repairs pushed so far, and the head commit whose failed checks were last dealt with.
    ci_repairs INTEGER NOT NULL DEFAULT 0,
    ci_head TEXT,
    -- `open` until a job finds it closed or merged.
    state TEXT NOT NULL DEFAULT 'open',
    PRIMARY KEY (forge, repo, number)
);

CREATE INDEX IF NOT EXISTS change_requests_by_issue ON change_requests (forge, repo, issue_number);
CREATE INDEX IF NOT EXISTS change_requests_open ON change_requests (forge, repo, state);

-- A conversation asks for the newest earlier job of its issue.
CREATE INDEX IF NOT EXISTS jobs_by_issue ON jobs (repo, issue_number, id);
