-- Clients record themselves here while they run, so that operators can see
-- who is alive and what each works. topics and queues are jsonb arrays of
-- strings.
CREATE TABLE IF NOT EXISTS {t_clients} (
	id         text        NOT NULL PRIMARY KEY,
	host       text        NOT NULL,
	pid        integer     NOT NULL,
	topics     jsonb       NOT NULL,
	queues     jsonb       NOT NULL,
	started_at timestamptz NOT NULL,
	seen_at    timestamptz NOT NULL
);
