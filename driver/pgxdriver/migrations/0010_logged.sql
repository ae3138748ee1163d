-- How many records a job's workers logged, kept or dropped: written with
-- the logs (by progress and by the outcome), so that a change feed learns
-- that a running job's logs changed by reading an integer of the row,
-- never the logs themselves. NULL when the job has no logs. Jobs that
-- logged before this migration get theirs from their logs.
ALTER TABLE {t} ADD COLUMN IF NOT EXISTS logged integer;

UPDATE {t} SET logged = jsonb_array_length(logs->'records') + coalesce((logs->>'dropped')::int, 0)
WHERE logs IS NOT NULL AND logged IS NULL;
