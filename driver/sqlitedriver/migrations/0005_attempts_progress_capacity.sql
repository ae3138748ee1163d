-- Each attempt explains itself. attempted_by is the client that claimed the
-- latest attempt; the claim sets it with locked_by, and unlike locked_by it
-- is kept after the attempt ends, so with attempted_at and finalized_at a
-- finished job tells when and where its last attempt ran.
ALTER TABLE {t} ADD COLUMN attempted_by TEXT;

-- progress is the latest progress a running job's worker reported (a JSON
-- object: attempt, percent, message, at), written by its client at a
-- bounded rate and kept after the job ends.
ALTER TABLE {t} ADD COLUMN progress TEXT;

-- A client records how many jobs of each of its queues it works at once (a
-- JSON object, queue name to count), so that Explain can tell whether a
-- due job waits for a free worker. NULL in records of clients that did not
-- record it.
ALTER TABLE {t_clients} ADD COLUMN max_workers TEXT;
