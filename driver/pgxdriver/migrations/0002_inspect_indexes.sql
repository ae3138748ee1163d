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
-- filtered List) reads the index above alone, never the table. A narrower
-- index of its own would count faster, but every index here is written by
-- every enqueue or completion: one on (status, queue, topic) cost a 1M
-- burn-down on Postgres a fifth of its throughput.

-- Outcomes over a recent window, and retention, find finished jobs by
-- status and when they finished.
CREATE INDEX IF NOT EXISTS {t_finalized_idx}
	ON {t} (status, finalized_at)
	WHERE finalized_at IS NOT NULL;
