-- Counts of jobs by status, queue and topic, kept by triggers, so that
-- Stats and the totals of List read a few rows instead of counting the
-- table. Triggers see every write, the client's and anyone else's, so the
-- counts stay exact. SQLite runs one write transaction at a time, so a
-- count updated in place makes no writer wait for another.
--
-- A row trigger costs a program run per row, and claims and completions
-- change thousands of rows a second: run for each, the update trigger
-- took a fifth of a burn-down. So the driver's claims and completions
-- count what they change themselves, once per batch, in the same
-- transaction, and mark the rows they change by adding 1 to counted; the
-- update trigger passes over rows so marked. Any other update (a
-- hand-written one, another tool's) leaves counted as it was and is
-- counted by the trigger.
ALTER TABLE {t} ADD COLUMN counted INTEGER NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS {t_counts} (
	status TEXT    NOT NULL,
	queue  TEXT    NOT NULL,
	topic  TEXT    NOT NULL,
	n      INTEGER NOT NULL,
	PRIMARY KEY (status, queue, topic)
) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS {t_count_ins} AFTER INSERT ON {t} BEGIN
	INSERT INTO {t_counts} (status, queue, topic, n) VALUES (new.status, new.queue, new.topic, 1)
	ON CONFLICT (status, queue, topic) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER IF NOT EXISTS {t_count_del} AFTER DELETE ON {t} BEGIN
	UPDATE {t_counts} SET n = n - 1
	WHERE status = old.status AND queue = old.queue AND topic = old.topic;
END;

-- Heartbeats, progress and retries made due now change none of the three
-- and fire nothing.
CREATE TRIGGER IF NOT EXISTS {t_count_upd} AFTER UPDATE OF status, queue, topic ON {t}
WHEN new.counted IS old.counted
	AND (old.status <> new.status OR old.queue <> new.queue OR old.topic <> new.topic) BEGIN
	UPDATE {t_counts} SET n = n - 1
	WHERE status = old.status AND queue = old.queue AND topic = old.topic;
	INSERT INTO {t_counts} (status, queue, topic, n) VALUES (new.status, new.queue, new.topic, 1)
	ON CONFLICT (status, queue, topic) DO UPDATE SET n = n + 1;
END;

-- The jobs already there; the migration's transaction holds the write
-- lock, so none is counted twice or missed.
DELETE FROM {t_counts};
INSERT INTO {t_counts} (status, queue, topic, n)
SELECT status, queue, topic, count(*) FROM {t} GROUP BY status, queue, topic;

-- With the counts kept, the counts index of migration 0002 has nothing
-- left to do, and its status index is left only to list jobs of one status
-- in ID order, while every enqueue and every completion wrote both. Lists
-- walk the primary key instead, or the index each status has anyway
-- (pending jobs the claim index, processing ones the lease index, finished
-- ones the finalized index); failed and cancelled jobs, the ones operators
-- look for among many completed ones, get an index of their own, which a
-- job that succeeds never writes.
DROP INDEX IF EXISTS {t_counts_idx};
DROP INDEX IF EXISTS {t_status_idx};
CREATE INDEX IF NOT EXISTS {t_failed_idx}
	ON {t} (status, id)
	WHERE status IN ('failed', 'cancelled');
