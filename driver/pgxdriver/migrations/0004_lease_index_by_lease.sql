-- The lease index now covers the rows that hold a lease (locked_until set),
-- which are exactly the processing jobs, instead of naming the status. A
-- completion picks processing jobs by ID; with the status in the index's
-- predicate, the planner could serve it from this index instead of the
-- primary key, and when statistics were stale (no analyze since the jobs
-- were claimed) it did, comparing every processing job with every item of
-- the batch. Heartbeats and rescues still walk this index.
DROP INDEX IF EXISTS {q_lease_idx};
CREATE INDEX IF NOT EXISTS {t_lease_idx}
	ON {t} (locked_until)
	WHERE locked_until IS NOT NULL;
