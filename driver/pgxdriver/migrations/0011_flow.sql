-- Flow control. {t_queues} holds one row per queue that has any: paused
-- (claims take none of its jobs), max_running (claims leave at most that
-- many of its jobs processing at once, across every client), and a rate
-- limit of rate_limit claims per rate_period microseconds, counted in
-- fixed windows (window_start, window_count). A queue without a row has
-- none. Claims of a queue with a limit take a lock on its row first, so
-- two clients cannot both see room for the same slot.
CREATE TABLE IF NOT EXISTS {t_queues} (
	queue        text        NOT NULL PRIMARY KEY,
	paused       boolean     NOT NULL DEFAULT false,
	max_running  integer,
	rate_limit   integer,
	rate_period  bigint,
	window_start timestamptz,
	window_count integer     NOT NULL DEFAULT 0,
	updated_at   timestamptz NOT NULL
);

-- Job dependencies. depends_on is the JSON array of the IDs of the jobs a
-- job was enqueued to wait for, kept for inspection. While it waits,
-- wait_policy says what a dependency that fails for good or is cancelled
-- does to it ('cancel' or 'run'), wait_run_at holds the run_at it was
-- enqueued with, and run_at is far in the future, so no claim reaches it.
-- Releasing the job clears both and restores run_at.
ALTER TABLE {t} ADD COLUMN IF NOT EXISTS depends_on jsonb;
ALTER TABLE {t} ADD COLUMN IF NOT EXISTS wait_policy text;
ALTER TABLE {t} ADD COLUMN IF NOT EXISTS wait_run_at timestamptz;

-- The waiting jobs, which clients look through about once a poll interval;
-- no other job is in this index.
CREATE INDEX IF NOT EXISTS {t_waiting_idx} ON {t} (id) WHERE wait_policy IS NOT NULL;
