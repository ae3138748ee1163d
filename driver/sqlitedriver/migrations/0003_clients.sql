-- Clients record themselves here while they run, so that operators can see
-- who is alive and what each works. topics and queues are JSON arrays of
-- strings; times are INTEGER microseconds since the Unix epoch, UTC.
CREATE TABLE IF NOT EXISTS {t_clients} (
	id         TEXT    NOT NULL PRIMARY KEY,
	host       TEXT    NOT NULL,
	pid        INTEGER NOT NULL,
	topics     TEXT    NOT NULL,
	queues     TEXT    NOT NULL,
	started_at INTEGER NOT NULL,
	seen_at    INTEGER NOT NULL
);
