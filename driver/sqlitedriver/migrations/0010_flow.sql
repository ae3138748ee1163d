-- Flow control. {t_queues} holds one row per queue that has any: paused
-- (claims take none of its jobs), max_running (claims leave at most that
-- many of its jobs processing at once, across every client), and a rate
-- limit of rate_limit claims per rate_period microseconds, counted in
-- fixed windows (window_start, window_count). A queue without a row has
-- none. SQLite runs one write transaction at a time, so a claim's count
-- and its update cannot interleave with another's.
CREATE TABLE IF NOT EXISTS {t_queues} (
	queue        TEXT    NOT NULL PRIMARY KEY,
	paused       INTEGER NOT NULL DEFAULT 0,
	max_running  INTEGER,
	rate_limit   INTEGER,
	rate_period  INTEGER,
	window_start INTEGER,
	window_count INTEGER NOT NULL DEFAULT 0,
	updated_at   INTEGER NOT NULL
) WITHOUT ROWID;

-- Job dependencies. depends_on is the JSON array of the IDs of the jobs a
-- job was enqueued to wait for, kept for inspection. While it waits,
-- wait_policy says what a dependency that fails for good or is cancelled
-- does to it ('cancel' or 'run'), wait_run_at holds the run_at it was
-- enqueued with, and run_at is far in the future, so no claim reaches it.
-- Releasing the job clears both and restores run_at.
ALTER TABLE {t} ADD COLUMN depends_on TEXT;
ALTER TABLE {t} ADD COLUMN wait_policy TEXT;
ALTER TABLE {t} ADD COLUMN wait_run_at INTEGER;

-- The waiting jobs, which clients look through about once a poll interval;
-- no other job is in this index.
CREATE INDEX IF NOT EXISTS {t_waiting_idx} ON {t} (id) WHERE wait_policy IS NOT NULL;
