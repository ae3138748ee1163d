package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/driver"
)

func migrateCommands() []command {
	return []command{{name: "migrate", args: "up|status|sql", summary: "apply, show or print the schema's migrations", run: runMigrate}}
}

func runMigrate(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("migrate", "up|status|sql")
	check := fs.Bool("check", false, "status: exit 1 when migrations are pending")
	dir := fs.String("dir", "", "sql: write one file per migration into this directory instead of printing them")
	format := fs.String("format", "plain", "sql: file layout with --dir: plain, goose or golang-migrate")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("migrate wants one of up, status or sql")
	}
	switch pos[0] {
	case "up":
		return c.migrateUp(ctx)
	case "status":
		return c.migrateStatus(ctx, *check)
	case "sql":
		return c.migrateSQL(ctx, *dir, *format)
	}
	return usageErrorf("unknown migrate verb %q: want up, status or sql", pos[0])
}

// migrateUp applies the pending migrations and says which.
func (c *cli) migrateUp(ctx context.Context) error {
	st, err := c.openStore(ctx, true)
	if err != nil {
		return err
	}
	defer st.close()
	before, err := st.migrations.MigrationStatus(ctx)
	if err != nil {
		return err
	}
	if err := st.migrate(ctx); err != nil {
		return err
	}
	after, err := st.migrations.MigrationStatus(ctx)
	if err != nil {
		return err
	}
	applied := []driver.MigrationState{}
	for i, m := range after {
		if m.Applied() && (i >= len(before) || !before[i].Applied()) {
			applied = append(applied, m)
		}
	}
	if c.json {
		return writeJSON(c.out(), map[string]any{"applied": applied, "version": version(after)})
	}
	for _, m := range applied {
		fmt.Fprintf(c.out(), "applied %s\n", m.Name)
	}
	fmt.Fprintf(c.out(), "schema at version %d (%s applied now)\n", version(after), count(len(applied), "migration"))
	return nil
}

// version returns the highest applied version.
func version(ms []driver.MigrationState) int {
	v := 0
	for _, m := range ms {
		if m.Applied() {
			v = max(v, m.Version)
		}
	}
	return v
}

// migrateStatus lists the migrations and whether each is applied.
func (c *cli) migrateStatus(ctx context.Context, check bool) error {
	st, err := c.openStore(ctx, false)
	if err != nil {
		return err
	}
	defer st.close()
	ms, err := st.migrations.MigrationStatus(ctx)
	if err != nil {
		return err
	}
	pending := pending(ms)
	if c.json {
		if err := writeJSON(c.out(), ms); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(c.out(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tNAME\tAPPLIED")
		for _, m := range ms {
			applied, name := "pending", m.Name
			if m.Applied() {
				applied = m.AppliedAt.Format(time.RFC3339)
			}
			if name == "" {
				name = "(unknown to this sluice: a newer release applied it)"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\n", m.Version, name, applied)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(c.out(), "%s database, %s, %d pending\n", st.kind, count(len(ms), "migration"), pending)
	}
	if check && pending > 0 {
		return fmt.Errorf("%s pending", count(pending, "migration"))
	}
	return nil
}

// migrateSQL prints the migrations' SQL, or writes them as files in the
// layout of a migration tool.
func (c *cli) migrateSQL(ctx context.Context, dir, format string) error {
	if !slices.Contains([]string{"plain", "goose", "golang-migrate"}, format) {
		return usageErrorf("--format %q: want plain, goose or golang-migrate", format)
	}
	if format != "plain" && dir == "" {
		return usageErrorf("--format %s needs --dir", format)
	}
	st, err := c.openStore(ctx, false)
	if err != nil {
		return err
	}
	defer st.close()
	ms, err := st.migrations.Migrations()
	if err != nil {
		return err
	}
	names := slices.Sorted(maps.Keys(ms)) // NNNN_ names sort in version order
	if dir == "" {
		for _, name := range names {
			fmt.Fprintf(c.out(), "-- sluice migration %s (%s)\n%s\n", name, st.kind, strings.TrimRight(ms[name], "\n"))
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range names {
		file, text := migrationFile(name, ms[name], format)
		if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644); err != nil {
			return err
		}
		fmt.Fprintln(c.out(), filepath.Join(dir, file))
	}
	return nil
}

// migrationFile returns the file name and text of one migration in format.
func migrationFile(name, sql, format string) (string, string) {
	sql = strings.TrimRight(sql, "\n") + "\n"
	switch format {
	case "goose":
		// One statement block: the functions' bodies hold semicolons.
		return name, "-- +goose Up\n-- +goose StatementBegin\n" + sql + "-- +goose StatementEnd\n"
	case "golang-migrate":
		return strings.TrimSuffix(name, ".sql") + ".up.sql", sql
	}
	return name, sql
}
