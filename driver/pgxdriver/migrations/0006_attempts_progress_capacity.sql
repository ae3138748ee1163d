-- Each attempt explains itself. attempted_by is the client that claimed the
-- latest attempt; the claim sets it with locked_by, and unlike locked_by it
-- is kept after the attempt ends, so with attempted_at and finalized_at a
-- finished job tells when and where its last attempt ran.
ALTER TABLE {t} ADD COLUMN IF NOT EXISTS attempted_by text;

-- progress is the latest progress a running job's worker reported (a jsonb
-- object: attempt, percent, message, at), written by its client at a
-- bounded rate and kept after the job ends. It is in no index, so its
-- updates stay HOT.
ALTER TABLE {t} ADD COLUMN IF NOT EXISTS progress jsonb;
