-- Workflows and batches: groups of jobs (docs/workflows.md).
--
-- group_id is the group a job belongs to (NULL for none), task its name
-- in a workflow, callback_of the group whose callback it is.
ALTER TABLE {t} ADD COLUMN IF NOT EXISTS group_id uuid;
ALTER TABLE {t} ADD COLUMN IF NOT EXISTS task text;
ALTER TABLE {t} ADD COLUMN IF NOT EXISTS callback_of uuid;

-- The jobs of a group by status: a group's view, its actions, and whether
-- it is done. Jobs of no group are not in it.
CREATE INDEX IF NOT EXISTS {t_group_idx} ON {t} (group_id, status) WHERE group_id IS NOT NULL;

-- {t_groups} holds the groups: a workflow or a batch, its name, whether it
-- is open (takes more jobs, is never done), its callbacks (the jobs
-- inserted when it is done, as JSON), and, once it was found done, when
-- (settled_at) and how (outcome: success or failure).
CREATE TABLE IF NOT EXISTS {t_groups} (
	id         uuid        NOT NULL PRIMARY KEY,
	kind       text        NOT NULL CHECK (kind IN ('workflow', 'batch')),
	name       text        NOT NULL,
	created_at timestamptz NOT NULL,
	open       boolean     NOT NULL DEFAULT false,
	callbacks  jsonb,
	settled_at timestamptz,
	outcome    text
);

-- Groups newest first, by name or not.
CREATE INDEX IF NOT EXISTS {t_groups_at_idx} ON {t_groups} (created_at, id);
-- The groups that may still settle: closed, not settled.
CREATE INDEX IF NOT EXISTS {t_unsettled_idx} ON {t_groups} (id) WHERE settled_at IS NULL AND NOT open;
