-- A job's checkpoint (opaque JSON the worker owns, so a restarted worker resumes without repeating
-- a side effect) and the delivery that created the job (the one whose payload the worker re-reads).
ALTER TABLE jobs ADD COLUMN checkpoint TEXT;
ALTER TABLE jobs ADD COLUMN origin_delivery TEXT;
