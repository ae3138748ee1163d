-- The jobs table. Names in braces are placeholders for the quoted,
-- schema-qualified table name and its indexes' names; the driver fills them
-- in (see the package documentation). Times are timestamptz, NULL when
-- unset. errors is a jsonb array of attempt errors, oldest first, NULL when
-- there are none; payload and result are jsonb.
--
-- The table is updated far more than it grows: every job is inserted once
-- and updated at least twice (claim, completion). A fillfactor below 100
-- leaves room on each page for HOT updates, and lower autovacuum scale
-- factors keep dead tuples and statistics in check on a table whose size
-- swings with the backlog.
CREATE TABLE IF NOT EXISTS {t} (
	id           uuid        NOT NULL PRIMARY KEY,
	topic        text        NOT NULL,
	queue        text        NOT NULL,
	priority     integer     NOT NULL DEFAULT 0,
	payload      jsonb       NOT NULL,
	status       text        NOT NULL DEFAULT 'pending'
		CHECK (status IN ('pending', 'processing', 'completed', 'failed', 'cancelled')),
	attempt      integer     NOT NULL DEFAULT 0,
	max_retries  integer     NOT NULL DEFAULT 0,
	run_at       timestamptz NOT NULL,
	created_at   timestamptz NOT NULL,
	attempted_at timestamptz,
	finalized_at timestamptz,
	locked_until timestamptz,
	locked_by    text,
	unique_key   text,
	errors       jsonb,
	result       jsonb,
	CHECK (status <> 'processing' OR (locked_by IS NOT NULL AND locked_until IS NOT NULL))
) WITH (
	fillfactor = 90,
	autovacuum_vacuum_scale_factor = 0.01,
	autovacuum_analyze_scale_factor = 0.02
);

-- Claims walk pending jobs of one queue in claim order. Finished and
-- processing jobs are not in the index, so they never slow a claim.
CREATE INDEX IF NOT EXISTS {t_claim_idx}
	ON {t} (queue, priority, run_at, id)
	WHERE status = 'pending';

-- Rescues find processing jobs whose lease has ended; heartbeats walk the
-- same few rows for one client's jobs.
CREATE INDEX IF NOT EXISTS {t_lease_idx}
	ON {t} (locked_until)
	WHERE status = 'processing';

-- At most one live job per unique key.
CREATE UNIQUE INDEX IF NOT EXISTS {t_unique_key_idx}
	ON {t} (unique_key)
	WHERE unique_key IS NOT NULL AND status IN ('pending', 'processing');
