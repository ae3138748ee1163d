-- Indexes for inspecting the queue.
--
-- Listing the jobs of one status walks this index in ID order, whichever
-- status is rare or clustered (pending jobs are the newest, failed ones
-- few). Queue and topic are keys too, so a filter on them is checked in the
-- index before any row is read. Processing jobs are left to the lease
-- index: heartbeats and rescues must never be tempted by this one.
CREATE INDEX IF NOT EXISTS {t_status_idx}
	ON {t} (status, id, queue, topic)
	WHERE status <> 'processing';

-- Counting jobs by status, queue and topic (Stats, and the totals of a
-- filtered List) reads this index alone, in group order, never the table.
-- Postgres counts from the index above with a hash aggregate and goes
-- without this one, which cost its burn-downs a fifth of their throughput;
-- SQLite has no hash aggregate and would sort a million rows instead.
CREATE INDEX IF NOT EXISTS {t_counts_idx}
	ON {t} (status, queue, topic)
	WHERE status <> 'processing';

-- Outcomes over a recent window, and retention, find finished jobs by
-- status and when they finished.
CREATE INDEX IF NOT EXISTS {t_finalized_idx}
	ON {t} (status, finalized_at)
	WHERE finalized_at IS NOT NULL;
