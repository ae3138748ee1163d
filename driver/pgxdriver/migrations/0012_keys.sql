-- Keys, sequences, and the limits of topics and keys (docs/flow-control.md).
--
-- key is the job's key (NULL for none): the customer, account or order its
-- limits per key count it under. sequence, when not NULL, puts the job in
-- the sequence of its key in its queue ('hold' or 'continue': what a job of
-- the sequence that fails for good does to the rest).
ALTER TABLE {t} ADD COLUMN IF NOT EXISTS key text;
ALTER TABLE {t} ADD COLUMN IF NOT EXISTS sequence text;

-- Keyed claims walk the keys of a queue's pending jobs here, and read each
-- key's jobs in no sequence in claim order (sequence IS NULL, before the
-- order's columns, so that a key whose jobs are all in its sequence is
-- passed at once). Jobs without a key are not in it.
CREATE INDEX IF NOT EXISTS {t_key_idx}
	ON {t} (queue, key, sequence, priority, run_at, id)
	WHERE status = 'pending' AND key IS NOT NULL;

-- The processing jobs of a key, counted against its limits.
CREATE INDEX IF NOT EXISTS {t_key_run_idx}
	ON {t} (key)
	WHERE status = 'processing' AND key IS NOT NULL;

-- The jobs of each sequence that can hold the rest, in sequence order.
CREATE INDEX IF NOT EXISTS {t_seq_idx}
	ON {t} (queue, key, id)
	WHERE sequence IS NOT NULL AND status IN ('pending', 'processing', 'failed');

-- {t_limits} holds the limits of scopes beyond a queue's state: one row per
-- scope (a queue or a topic) with key '', and one per key of the scope
-- whose limits or weight differ from the scope's defaults, or whose rate
-- window is counted. On the scope's row: max_running, rate_limit and
-- rate_period limit the whole scope (topics only; a queue's are in
-- {t_queues}); key_max_running, key_rate_limit and key_rate_period are the
-- defaults of each key; sequence is the policy of the scope's keyed jobs
-- enqueued without one of their own; fair makes claims of a queue take
-- jobs round-robin across keys from after cursor, the key served last. On
-- a key's row: its own max_running, rate_limit and rate_period (NULL for
-- the scope's default) and weight; overrides counts, on the scope's row,
-- the keys that have their own, so that a claim reads keys' rows only
-- when some scope limits keys. window_start and window_count count the
-- claims of the row's rate window. Claims that obey a scope's limits lock
-- its row first, so that two clients cannot both see room for one slot.
CREATE TABLE IF NOT EXISTS {t_limits} (
	scope           text        NOT NULL CHECK (scope IN ('queue', 'topic')),
	name            text        NOT NULL,
	key             text        NOT NULL,
	max_running     integer,
	rate_limit      integer,
	rate_period     bigint,
	key_max_running integer,
	key_rate_limit  integer,
	key_rate_period bigint,
	sequence        text,
	fair            boolean     NOT NULL DEFAULT false,
	weight          integer,
	overrides       integer     NOT NULL DEFAULT 0,
	cursor          text,
	window_start    timestamptz,
	window_count    integer     NOT NULL DEFAULT 0,
	updated_at      timestamptz NOT NULL,
	PRIMARY KEY (scope, name, key)
);
