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

-- A client records how many jobs of each of its queues it works at once (a
-- jsonb object, queue name to count), so that Explain can tell whether a
-- due job waits for a free worker. NULL in records of clients that did not
-- record it.
ALTER TABLE {t_clients} ADD COLUMN IF NOT EXISTS max_workers jsonb;
