package sqlitedriver

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one schema version: its SQL with "{t}" standing for the
// jobs table's name.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations returns the embedded migrations in version order. A file
// is named NNNN_description.sql, NNNN being its version.
func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("migration %s: name does not start with a version", base)
		}
		b, err := migrationFS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s have the same version", ms[i-1].name, ms[i].name)
		}
	}
	return ms, nil
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
	if err := d.lockWrite(ctx); err != nil {
		return wrapErr(ctx, "migrate", err)
	}
	err = d.migrate(ctx, ms)
	d.unlockWrite()
	if err != nil {
		return wrapErr(ctx, "migrate", err)
	}
	d.prepareAll(ctx)
	return nil
}

// migrate applies ms on a connection of its own, in a transaction begun
// with BEGIN IMMEDIATE whatever the handle's _txlock.
func (d *Driver) migrate(ctx context.Context, ms []migration) (err error) {
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
	migrations := d.table + "_migrations"
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
	r := strings.NewReplacer("{t}", d.table)
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		if _, err := conn.ExecContext(ctx, r.Replace(m.sql)); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO `+migrations+` (version, applied_at) VALUES (?, ?)`,
			m.version, micros(time.Now())); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	return err
}

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
		q.finalize, q.heartbeat, q.rescue, q.release, q.get, q.insertRows[0]}
	for _, s := range all {
		if _, err := d.stmts.get(ctx, s); err != nil {
			return
		}
	}
}
