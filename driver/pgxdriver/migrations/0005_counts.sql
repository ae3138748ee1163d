-- Counts of jobs by status, queue and topic, kept by triggers, so that
-- Stats and the totals of List read a few rows instead of counting the
-- table. Triggers see every write, the client's and anyone else's, so the
-- counts stay exact.
--
-- Writers never update a count in place: two transactions enqueuing the
-- same topic would then wait for each other, the second until the first
-- commits. Instead each statement that changes the jobs table appends
-- what it changed, one row per status, queue and topic, to {t_count_log},
-- which has no index and takes no lock that writers share. A running
-- client folds the log into {t_counts} about once a second (see
-- Driver.Maintain). A reader sums both in one snapshot, so it sees every
-- committed change and none that is not, folded or not.
CREATE TABLE IF NOT EXISTS {t_counts} (
	status text   NOT NULL,
	queue  text   NOT NULL,
	topic  text   NOT NULL,
	n      bigint NOT NULL,
	PRIMARY KEY (status, queue, topic)
);

CREATE TABLE IF NOT EXISTS {t_count_log} (
	status text   NOT NULL,
	queue  text   NOT NULL,
	topic  text   NOT NULL,
	n      bigint NOT NULL
);

-- Statement-level triggers with transition tables: a claim or completion
-- of a thousand jobs appends one row per status, queue and topic, not a
-- thousand.
CREATE OR REPLACE FUNCTION {f_count_ins}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO {t_count_log} (status, queue, topic, n)
	SELECT status, queue, topic, count(*) FROM new_rows GROUP BY status, queue, topic;
	RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION {f_count_del}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO {t_count_log} (status, queue, topic, n)
	SELECT status, queue, topic, -count(*) FROM old_rows GROUP BY status, queue, topic;
	RETURN NULL;
END $$;

-- An update that changes no status, queue or topic (a heartbeat, a retry
-- made due now) appends nothing.
CREATE OR REPLACE FUNCTION {f_count_upd}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO {t_count_log} (status, queue, topic, n)
	SELECT status, queue, topic, sum(n) FROM (
		SELECT status, queue, topic, -1 AS n FROM old_rows
		UNION ALL
		SELECT status, queue, topic, 1 FROM new_rows
	) AS c
	GROUP BY status, queue, topic
	HAVING sum(n) <> 0;
	RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION {f_count_trunc}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM {t_count_log};
	DELETE FROM {t_counts};
	RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS {n_count_ins} ON {t};
CREATE TRIGGER {n_count_ins} AFTER INSERT ON {t}
	REFERENCING NEW TABLE AS new_rows
	FOR EACH STATEMENT EXECUTE FUNCTION {f_count_ins}();
DROP TRIGGER IF EXISTS {n_count_del} ON {t};
CREATE TRIGGER {n_count_del} AFTER DELETE ON {t}
	REFERENCING OLD TABLE AS old_rows
	FOR EACH STATEMENT EXECUTE FUNCTION {f_count_del}();
DROP TRIGGER IF EXISTS {n_count_upd} ON {t};
CREATE TRIGGER {n_count_upd} AFTER UPDATE ON {t}
	REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
	FOR EACH STATEMENT EXECUTE FUNCTION {f_count_upd}();
DROP TRIGGER IF EXISTS {n_count_trunc} ON {t};
CREATE TRIGGER {n_count_trunc} AFTER TRUNCATE ON {t}
	FOR EACH STATEMENT EXECUTE FUNCTION {f_count_trunc}();

-- The jobs already there. Creating the triggers locked the table against
-- writes until this transaction commits, so none is counted twice or
-- missed.
DELETE FROM {t_count_log};
DELETE FROM {t_counts};
INSERT INTO {t_counts} (status, queue, topic, n)
SELECT status, queue, topic, count(*) FROM {t} GROUP BY status, queue, topic;

-- With the counts kept, the status index of migration 0002 is left only
-- to list jobs of one status in ID order, and every enqueue and every
-- completion wrote it. Lists walk the primary key instead, or the index
-- each status has anyway (pending jobs the claim index, processing ones
-- the lease index, finished ones the finalized index); failed and
-- cancelled jobs, the ones operators look for among many completed ones,
-- get an index of their own, which a job that succeeds never writes.
DROP INDEX IF EXISTS {q_status_idx};
CREATE INDEX IF NOT EXISTS {t_failed_idx}
	ON {t} (status, id)
	WHERE status IN ('failed', 'cancelled');
