-- Migration 2: a claim names its owner, so a worker that lost its claim cannot finish or release
-- another worker's; runs heartbeat, so one whose process died shows as interrupted, and a run
-- records the run it resumes.
ALTER TABLE cascade_scheduled_deletion ADD COLUMN claim_token TEXT;
ALTER TABLE cascade_run ADD COLUMN heartbeat TEXT;
ALTER TABLE cascade_run ADD COLUMN resumes INTEGER;
