-- The jobs table. Times are INTEGER microseconds since the Unix epoch, UTC;
-- NULL when unset. errors is a JSON array of attempt errors, oldest first;
-- payload and result are JSON text.
CREATE TABLE IF NOT EXISTS {t} (
	id           TEXT    NOT NULL PRIMARY KEY,
	topic        TEXT    NOT NULL,
	queue        TEXT    NOT NULL,
	priority     INTEGER NOT NULL DEFAULT 0,
	payload      TEXT    NOT NULL,
	status       TEXT    NOT NULL DEFAULT 'pending'
		CHECK (status IN ('pending', 'processing', 'completed', 'failed', 'cancelled')),
	attempt      INTEGER NOT NULL DEFAULT 0,
	max_retries  INTEGER NOT NULL DEFAULT 0,
	run_at       INTEGER NOT NULL,
	created_at   INTEGER NOT NULL,
	attempted_at INTEGER,
	finalized_at INTEGER,
	locked_until INTEGER,
	locked_by    TEXT,
	unique_key   TEXT,
	errors       TEXT,
	result       TEXT,
	CHECK (status <> 'processing' OR (locked_by IS NOT NULL AND locked_until IS NOT NULL))
);

-- Claims walk pending jobs of one queue in claim order; topic rides along so
-- the walk never reads the table to filter by it. Finished and processing
-- jobs are not in the index, so they never slow a claim.
CREATE INDEX IF NOT EXISTS {t_claim_idx}
	ON {t} (queue, priority, run_at, id, topic)
	WHERE status = 'pending';

-- Rescue finds processing jobs whose lease has ended; heartbeats walk the
-- same few rows for a client's jobs. A second index on locked_by would cost
-- every claim and every completion more than it saves the heartbeat, which
-- runs every few seconds over the jobs in flight only.
CREATE INDEX IF NOT EXISTS {t_lease_idx}
	ON {t} (locked_until)
	WHERE status = 'processing';

-- At most one live job per unique key.
CREATE UNIQUE INDEX IF NOT EXISTS {t_unique_key_idx}
	ON {t} (unique_key)
	WHERE unique_key IS NOT NULL AND status IN ('pending', 'processing');
