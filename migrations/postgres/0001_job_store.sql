-- The durable job store: webhook deliveries, the jobs they enqueue, and each job's event log.
-- Times are Unix epoch milliseconds (UTC) so both dialects compare them the same way.
CREATE TABLE IF NOT EXISTS jobs (
    id BIGSERIAL PRIMARY KEY,
    forge TEXT NOT NULL,
    repo TEXT NOT NULL,
    issue_number BIGINT NOT NULL,
    -- forge:repo:issue while the job is queued or running; NULL once it has finished.
    dedupe_key TEXT UNIQUE,
    state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed')),
    stage TEXT,
    attempts BIGINT NOT NULL DEFAULT 0,
    run_after BIGINT NOT NULL,
    lease_owner TEXT,
    lease_until BIGINT,
    last_error TEXT,
    failure_code TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE INDEX IF NOT EXISTS jobs_claimable ON jobs (state, run_after);

CREATE TABLE IF NOT EXISTS deliveries (
    id TEXT PRIMARY KEY,
    forge TEXT NOT NULL,
    event TEXT NOT NULL,
    received_at BIGINT NOT NULL,
    payload BYTEA NOT NULL,
    job_id BIGINT REFERENCES jobs (id)
);

CREATE TABLE IF NOT EXISTS job_events (
    id BIGSERIAL PRIMARY KEY,
    job_id BIGINT NOT NULL REFERENCES jobs (id),
    at BIGINT NOT NULL,
    stage TEXT NOT NULL,
    message TEXT NOT NULL
);

CREATE INDEX IF NOT EXISTS job_events_by_job ON job_events (job_id, id);
