-- What the model cost: one row per job run, with the UTC day it was spent on, summed per
-- repository and day for the daily spending caps, and per job for the jobs pages.
CREATE TABLE IF NOT EXISTS llm_spend (
    id BIGSERIAL PRIMARY KEY,
    forge TEXT NOT NULL,
    repo TEXT NOT NULL,
    -- `2026-11-26`: the UTC day of `recorded_at`.
    day TEXT NOT NULL,
    job_id BIGINT NOT NULL,
    model TEXT NOT NULL,
    usd DOUBLE PRECISION NOT NULL,
    -- 0 when the model had no known price (its tokens counted as $0).
    priced BIGINT NOT NULL,
    recorded_at BIGINT NOT NULL
);

CREATE INDEX IF NOT EXISTS llm_spend_by_day ON llm_spend (day, forge, repo);
CREATE INDEX IF NOT EXISTS llm_spend_by_job ON llm_spend (job_id);

-- A repository's issue told that its daily cap was reached: at most once per repository and day.
CREATE TABLE IF NOT EXISTS spend_notices (
    forge TEXT NOT NULL,
    repo TEXT NOT NULL,
    day TEXT NOT NULL,
    issue_number BIGINT NOT NULL,
    at BIGINT NOT NULL,
    PRIMARY KEY (forge, repo, day)
);
