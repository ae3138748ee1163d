-- The log of operators' actions that change feeds read: a requeue or a
-- delete changes no column a feed finds through an index (a requeued job
-- leaves the finished jobs, a deleted one leaves the table), so each notes
-- the jobs it changed here, with their topic and queue for a job that is
-- gone. Only requeues and deletes write it, and they delete the entries
-- older than driver.ActLogRetention as they go: claims, completions and
-- enqueues never touch it. Times are INTEGER microseconds since the Unix
-- epoch, UTC.
CREATE TABLE IF NOT EXISTS {t_acts} (
	at    INTEGER NOT NULL,
	id    TEXT    NOT NULL,
	topic TEXT    NOT NULL,
	queue TEXT    NOT NULL
);

CREATE INDEX IF NOT EXISTS {t_acts_idx} ON {t_acts} (at);
