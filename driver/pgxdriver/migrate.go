package pgxdriver

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/migration"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrations returns the SQL of every migration [Driver.Migrate] applies,
// in order, keyed by file name, with placeholders filled in for the
// driver's schema and table. It is for those who run migrations with their
// own tool (goose, golang-migrate, atlas): see the package documentation.
func (d *Driver) Migrations() (map[string]string, error) {
	if d.err != nil {
		return nil, d.err
	}
	ms, err := loadMigrations()
	if err != nil {
		return nil, fmt.Errorf("pgxdriver: migrations: %w", err)
	}
	out := make(map[string]string, len(ms))
	r := d.migrationReplacer()
	for _, m := range ms {
		out[m.Name] = r.Replace(m.SQL)
	}
	return out, nil
}

// loadMigrations returns the embedded migrations in version order.
func loadMigrations() ([]migration.Migration, error) {
	return migration.Load(migrationFS, "migrations/*.sql")
}

// migrationReplacer fills in a migration's placeholders: {t} is the
// qualified, quoted table, {t_clients}, {t_counts}, {t_count_log},
// {t_schedules}, {t_acts}, {t_queues}, {t_limits}, {t_groups} and
// {t_metrics} the qualified, quoted tables of client records, counts,
// schedules, actions, queue states, limits, groups and metrics, {t_suffix} the quoted name
// <table>_suffix of one of its indexes (which Postgres puts in the table's
// schema), as CREATE INDEX takes it, and {q_suffix} the same
// name qualified, as DROP INDEX takes it. For the counting triggers,
// {f_name} is the qualified function <table>_name and {n_name} the quoted
// trigger name <table>_name.
func (d *Driver) migrationReplacer() *strings.Replacer {
	pairs := []string{"{t}", d.ident(d.table), "{t_clients}", d.clientsTable(),
		"{t_counts}", d.countsTable(), "{t_count_log}", d.countLogTable(), "{t_schedules}", d.schedulesTable(),
		"{t_acts}", d.actsTable(), "{t_queues}", d.queuesTable(), "{t_limits}", d.limitsTable(), "{t_groups}", d.groupsTable(),
		"{t_metrics}", d.metricsTable()}
	for _, suffix := range []string{"claim_idx", "lease_idx", "unique_key_idx", "status_idx", "finalized_idx", "failed_idx",
		"tags_idx", "sched_due_idx", "acts_idx", "waiting_idx", "key_idx", "key_run_idx", "seq_idx", "group_idx", "groups_at_idx",
		"unsettled_idx", "metrics_minute_idx"} {
		name := d.table + "_" + suffix
		pairs = append(pairs, "{t_"+suffix+"}", pgx.Identifier{name}.Sanitize(), "{q_"+suffix+"}", d.ident(name))
	}
	for _, suffix := range []string{"count_ins", "count_upd", "count_del", "count_trunc"} {
		name := d.table + "_" + suffix
		pairs = append(pairs, "{f_"+suffix+"}", d.ident(name), "{n_"+suffix+"}", pgx.Identifier{name}.Sanitize())
	}
	return strings.NewReplacer(pairs...)
}

// lockKey is the key of the advisory lock Migrate holds: a hash of the
// qualified table name, so migrations of different tables do not wait for
// each other.
func (d *Driver) lockKey() int64 {
	h := fnv.New64a()
	h.Write([]byte("sluice migrate " + d.ident(d.table)))
	return int64(h.Sum64())
}

// Migrate brings the schema up to the newest version: in one transaction
// holding a transaction-level advisory lock (pg_advisory_xact_lock), it
// creates the schema given by [WithSchema] if needed, then applies every
// embedded migration not yet recorded in the table <table>_migrations and
// records it. Processes migrating at once take turns on the lock, and each
// applies only what the others have not. Migrate is idempotent.
func (d *Driver) Migrate(ctx context.Context) error {
	if d.err != nil {
		return d.err
	}
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("pgxdriver: migrate: %w", err)
	}
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return wrapErr(ctx, "migrate", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := d.migrate(ctx, tx, ms); err != nil {
		return wrapErr(ctx, "migrate", err)
	}
	return wrapErr(ctx, "migrate", tx.Commit(ctx))
}

func (d *Driver) migrate(ctx context.Context, tx pgx.Tx, ms []migration.Migration) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, d.lockKey()); err != nil {
		return err
	}
	if d.schema != "" {
		// CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege on the
		// database even when the schema exists; a role that may only use a
		// schema made for it must still be able to migrate.
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)`, d.schema).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{d.schema}.Sanitize()); err != nil {
				return err
			}
		}
	}
	versions := d.ident(d.table + "_migrations")
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+versions+` (
	version    integer     NOT NULL PRIMARY KEY,
	name       text        NOT NULL,
	applied_at timestamptz NOT NULL
)`); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT version FROM `+versions)
	if err != nil {
		return err
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return err
	}
	r := d.migrationReplacer()
	for _, m := range ms {
		if slices.Contains(applied, int32(m.Version)) {
			continue
		}
		if _, err := tx.Exec(ctx, r.Replace(m.SQL)); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+versions+` (version, name, applied_at) VALUES ($1, $2, $3)`,
			m.Version, m.Name, time.Now()); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	return nil
}

// MigrationStatus returns every embedded migration with when the database
// recorded it in <table>_migrations (zero when pending), and any version
// recorded there that the driver does not know, in version order. It
// writes nothing; on a database (or schema) never migrated every migration
// is pending.
func (d *Driver) MigrationStatus(ctx context.Context) ([]driver.MigrationState, error) {
	if d.err != nil {
		return nil, d.err
	}
	ms, err := loadMigrations()
	if err != nil {
		return nil, fmt.Errorf("pgxdriver: migration status: %w", err)
	}
	applied, err := d.appliedAt(ctx)
	if err != nil {
		return nil, wrapErr(ctx, "migration status", err)
	}
	return migration.Status(ms, applied), nil
}

// appliedAt returns when each version recorded in <table>_migrations was
// applied; none when that table does not exist.
func (d *Driver) appliedAt(ctx context.Context) (map[int]time.Time, error) {
	versions := d.ident(d.table + "_migrations")
	var exists bool
	if err := d.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, versions).Scan(&exists); err != nil || !exists {
		return nil, err
	}
	rows, err := d.pool.Query(ctx, `SELECT version, applied_at FROM `+versions)
	if err != nil {
		return nil, err
	}
	applied := make(map[int]time.Time)
	var v int32
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&v, &at}, func() error {
		applied[int(v)] = at
		return nil
	})
	return applied, err
}
