package sqlitedriver

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"embed"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/migration"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// loadMigrations returns the embedded migrations in version order.
func loadMigrations() ([]migration.Migration, error) {
	return migration.Load(migrationFS, "migrations/*.sql")
}

// Migrate brings the schema up to the newest version: it applies, in one
// immediate transaction, every embedded migration not yet recorded in the
// table <table>_migrations, and records each with the time it was applied.
// The immediate transaction holds SQLite's write lock from the start, so
// processes migrating at once take turns and each applies only what the
// others have not. Migrate is idempotent.
func (d *Driver) Migrate(ctx context.Context) error {
	if d.err != nil {
		return d.err
	}
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("sqlitedriver: migrate: %w", err)
	}
	if err := d.writes.Lock(ctx); err != nil {
		return wrapErr(ctx, "migrate", err)
	}
	err = d.migrate(ctx, ms)
	d.writes.Unlock()
	if err != nil {
		return wrapErr(ctx, "migrate", err)
	}
	d.prepareAll(ctx)
	return nil
}

// migrate applies ms on a connection of its own, in a transaction begun
// with BEGIN IMMEDIATE whatever the handle's _txlock.
func (d *Driver) migrate(ctx context.Context, ms []migration.Migration) (err error) {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	defer func() {
		if err == nil {
			return
		}
		if _, rbErr := conn.ExecContext(context.Background(), "ROLLBACK"); rbErr != nil {
			// The connection may still be in the transaction: discard it.
			_ = conn.Raw(func(any) error { return sqldriver.ErrBadConn })
		}
	}()
	migrations := quoteIdent(d.table + "_migrations")
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+migrations+` (
	version    INTEGER NOT NULL PRIMARY KEY,
	applied_at INTEGER NOT NULL
)`); err != nil {
		return err
	}
	applied, err := appliedVersions(ctx, conn, migrations)
	if err != nil {
		return err
	}
	r := migrationReplacer(d.table)
	for _, m := range ms {
		if applied[m.Version] {
			continue
		}
		if _, err := conn.ExecContext(ctx, r.Replace(m.SQL)); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO `+migrations+` (version, applied_at) VALUES (?, ?)`,
			m.Version, micros(time.Now())); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	return err
}

// indexSuffixes are the suffixes of the names derived from the jobs
// table's: each of its indexes and triggers, the tables of client records,
// counts, schedules, actions, queue states, limits and groups, is named
// <table>_suffix.
var indexSuffixes = []string{"claim_idx", "lease_idx", "unique_key_idx", "status_idx", "counts_idx",
	"finalized_idx", "failed_idx", "clients", "counts", "count_ins", "count_del", "count_upd",
	"tags", "tags_ins", "tags_del", "tags_upd",
	"schedules", "sched_due_idx", "acts", "acts_idx", "queues", "waiting_idx",
	"key_idx", "key_run_idx", "seq_idx", "limits", "group_idx", "groups", "groups_at_idx", "unsettled_idx",
	"metrics", "metrics_minute_idx"}

// migrationReplacer fills in a migration's placeholders for the jobs table
// named table: {t} is the quoted table, {t_suffix} the quoted name
// <table>_suffix of one of its indexes.
func migrationReplacer(table string) *strings.Replacer {
	pairs := []string{"{t}", quoteIdent(table)}
	for _, suffix := range indexSuffixes {
		pairs = append(pairs, "{t_"+suffix+"}", quoteIdent(table+"_"+suffix))
	}
	return strings.NewReplacer(pairs...)
}

// appliedVersions returns the versions recorded in the migrations table
// (quoted).
func appliedVersions(ctx context.Context, conn *sql.Conn, table string) (map[int]bool, error) {
	rows, err := conn.QueryContext(ctx, `SELECT version FROM `+table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	applied := make(map[int]bool)
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		applied[v] = true
	}
	return applied, rows.Err()
}

// prepareAll prepares the driver's statements on the handle, so that
// operations in callers' transactions on the same handle find them cached.
// It is best-effort: a statement that is not prepared is sent as text.
func (d *Driver) prepareAll(ctx context.Context) {
	q := d.q
	all := []string{q.insertUnique, q.selectLiveByKey, q.claim,
		q.finalize, q.heartbeat, q.rescue, q.get, q.insertRows[0]}
	for _, s := range all {
		if _, err := d.stmts.get(ctx, s); err != nil {
			return
		}
	}
}

// Migrations returns the SQL of every migration [Driver.Migrate] applies,
// keyed by file name, with placeholders filled in for the driver's table.
// It is for those who run migrations with their own tool (goose,
// golang-migrate, atlas). A database migrated that way has no record of
// its versions in <table>_migrations, so Migrate would apply them again:
// every statement is idempotent (IF NOT EXISTS), except those of a
// migration that changes a table, so pick one way and keep to it.
func (d *Driver) Migrations() (map[string]string, error) {
	if d.err != nil {
		return nil, d.err
	}
	ms, err := loadMigrations()
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: migrations: %w", err)
	}
	out := make(map[string]string, len(ms))
	r := migrationReplacer(d.table)
	for _, m := range ms {
		out[m.Name] = r.Replace(m.SQL)
	}
	return out, nil
}

// MigrationStatus returns every embedded migration with when the database
// recorded it in <table>_migrations (zero when pending), and any version
// recorded there that the driver does not know, in version order. It
// writes nothing; on a database never migrated every migration is pending.
func (d *Driver) MigrationStatus(ctx context.Context) ([]driver.MigrationState, error) {
	if d.err != nil {
		return nil, d.err
	}
	ms, err := loadMigrations()
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: migration status: %w", err)
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
	name := d.table + "_migrations"
	var n int
	if err := d.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`,
		name).Scan(&n); err != nil || n == 0 {
		return nil, err
	}
	rows, err := d.db.QueryContext(ctx, `SELECT version, applied_at FROM `+quoteIdent(name))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	applied := make(map[int]time.Time)
	for rows.Next() {
		var v int
		var at int64
		if err := rows.Scan(&v, &at); err != nil {
			return nil, err
		}
		applied[v] = time.UnixMicro(at).UTC()
	}
	return applied, rows.Err()
}
