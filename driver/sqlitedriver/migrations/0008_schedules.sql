-- Schedules: stored schedules (kind 'stored'), which users create and
-- change through the client, and the tick state of periodic jobs declared
-- in code (kind 'periodic'). Times are INTEGER microseconds since the Unix
-- epoch, UTC; payload is JSON text. next_run_at is the first tick not yet
-- recorded (NULL while disabled); a client records each tick, and enqueues
-- its job, by a compare-and-set on version in the transaction of the
-- job's insert, so that one tick makes one job however many clients run.
CREATE TABLE IF NOT EXISTS {t_schedules} (
	kind        TEXT    NOT NULL CHECK (kind IN ('stored', 'periodic')),
	name        TEXT    NOT NULL,
	cron        TEXT    NOT NULL,
	time_zone   TEXT    NOT NULL,
	topic       TEXT    NOT NULL,
	payload     TEXT    NOT NULL,
	queue       TEXT    NOT NULL,
	priority    INTEGER NOT NULL,
	max_retries INTEGER NOT NULL,
	disabled    INTEGER NOT NULL,
	catch_up    TEXT    NOT NULL,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL,
	next_run_at INTEGER,
	last_run_at INTEGER,
	last_job_id TEXT,
	version     INTEGER NOT NULL,
	PRIMARY KEY (kind, name)
);

-- The clients look for due schedules once a poll interval, through this
-- index of the enabled ones.
CREATE INDEX IF NOT EXISTS {t_sched_due_idx} ON {t_schedules} (next_run_at) WHERE next_run_at IS NOT NULL;
