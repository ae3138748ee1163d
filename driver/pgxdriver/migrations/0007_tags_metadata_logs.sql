-- Tags, metadata and logs. tags is a text array and metadata a jsonb
-- object, both set at enqueue and never changed by the driver; logs is a
-- jsonb object (records, dropped) of the records a job's workers logged,
-- written by the client holding the claim at a bounded rate. All are NULL
-- when a job has none.
ALTER TABLE {t} ADD COLUMN IF NOT EXISTS tags text[];
ALTER TABLE {t} ADD COLUMN IF NOT EXISTS metadata jsonb;
ALTER TABLE {t} ADD COLUMN IF NOT EXISTS logs jsonb;

-- Lists of the jobs carrying some tags (tags @> or && an array) read this
-- index. It holds the jobs that have tags only, so a job without tags
-- never writes it, however often it is claimed and completed.
CREATE INDEX IF NOT EXISTS {t_tags_idx} ON {t} USING gin (tags) WHERE tags IS NOT NULL;
