-- Tags, metadata and logs. tags is a JSON array of strings, metadata a
-- JSON object, both set at enqueue and never changed by the driver; logs
-- is a JSON object (records, dropped) of the records a job's workers
-- logged, written by the client holding the claim at a bounded rate. All
-- are NULL when a job has none, and in no index of the table, so a job
-- without them costs nothing more.
ALTER TABLE {t} ADD COLUMN tags TEXT;
ALTER TABLE {t} ADD COLUMN metadata TEXT;
ALTER TABLE {t} ADD COLUMN logs TEXT;

-- A job's tags, one row each, so that a list of the jobs carrying a tag
-- reads the jobs that carry it, not the table. Kept by triggers that fire
-- only for jobs with tags: an insert or delete of a job without tags, and
-- any update that does not name the tags column (claims, completions),
-- leaves this table alone.
CREATE TABLE IF NOT EXISTS {t_tags} (
	tag    TEXT NOT NULL,
	job_id TEXT NOT NULL,
	PRIMARY KEY (tag, job_id)
) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS {t_tags_ins} AFTER INSERT ON {t} WHEN new.tags IS NOT NULL BEGIN
	INSERT OR IGNORE INTO {t_tags} (tag, job_id) SELECT value, new.id FROM json_each(new.tags);
END;

CREATE TRIGGER IF NOT EXISTS {t_tags_del} AFTER DELETE ON {t} WHEN old.tags IS NOT NULL BEGIN
	DELETE FROM {t_tags} WHERE job_id = old.id AND tag IN (SELECT value FROM json_each(old.tags));
END;

CREATE TRIGGER IF NOT EXISTS {t_tags_upd} AFTER UPDATE OF tags, id ON {t}
WHEN old.tags IS NOT new.tags OR old.id IS NOT new.id BEGIN
	DELETE FROM {t_tags} WHERE job_id = old.id AND tag IN (SELECT value FROM json_each(old.tags));
	INSERT OR IGNORE INTO {t_tags} (tag, job_id) SELECT value, new.id FROM json_each(new.tags);
END;
