-- Schedules: stored schedules (kind 'stored'), which users create and
-- change through the client, and the tick state of periodic jobs declared
-- in code (kind 'periodic'). next_run_at is the first tick not yet
-- recorded (NULL while disabled); a client records each tick, and enqueues
-- its job, by a compare-and-set on version in the transaction of the
-- job's insert, so that one tick makes one job however many clients run.
CREATE TABLE IF NOT EXISTS {t_schedules} (
	kind        text        NOT NULL CHECK (kind IN ('stored', 'periodic')),
	name        text        NOT NULL,
	cron        text        NOT NULL,
	time_zone   text        NOT NULL,
	topic       text        NOT NULL,
	payload     jsonb       NOT NULL,
	queue       text        NOT NULL,
	priority    integer     NOT NULL,
	max_retries integer     NOT NULL,
	disabled    boolean     NOT NULL,
	catch_up    text        NOT NULL,
	created_at  timestamptz NOT NULL,
	updated_at  timestamptz NOT NULL,
	next_run_at timestamptz,
	last_run_at timestamptz,
	last_job_id text,
	version     bigint      NOT NULL,
	PRIMARY KEY (kind, name)
);

-- The clients look for due schedules once a poll interval, through this
-- index of the enabled ones.
CREATE INDEX IF NOT EXISTS {t_sched_due_idx} ON {t_schedules} (next_run_at) WHERE next_run_at IS NOT NULL;
