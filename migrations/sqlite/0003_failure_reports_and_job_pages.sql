-- A failed job whose failure report the forge did not take: when to try the report again (NULL when
-- none is owed) and how many tries it had; the job itself stays failed meanwhile.
ALTER TABLE jobs ADD COLUMN report_due INTEGER;
ALTER TABLE jobs ADD COLUMN report_attempts INTEGER NOT NULL DEFAULT 0;

-- The jobs pages list newest first, filtered by state or by repository.
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, id);
CREATE INDEX IF NOT EXISTS jobs_by_repo ON jobs (repo, id);
CREATE INDEX IF NOT EXISTS jobs_report_due ON jobs (report_due);
