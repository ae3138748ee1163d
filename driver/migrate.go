package driver

import (
	"context"
	"time"
)

// MigrationState is one of a driver's schema versions and whether a
// database has it.
type MigrationState struct {
	// Version is the migration's number; migrations apply in its order.
	Version int `json:"version"`
	// Name is the migration's file name, e.g. 0001_create_jobs.sql; empty
	// for a version the database records but the driver does not know (one
	// applied by a newer release).
	Name string `json:"name"`
	// AppliedAt is when the database recorded it as applied; zero when it
	// is pending.
	AppliedAt time.Time `json:"applied_at,omitzero"`
}

// Applied reports whether the database has the migration.
func (m MigrationState) Applied() bool { return !m.AppliedAt.IsZero() }

// MigrationReporter is implemented by drivers that can tell which of their
// migrations a database has, and hand out their SQL for those who run
// migrations with their own tools.
type MigrationReporter interface {
	// MigrationStatus returns every migration the driver knows, and every
	// version the database records that it does not, in version order. It
	// writes nothing: on a database never migrated every migration is
	// pending.
	MigrationStatus(ctx context.Context) ([]MigrationState, error)

	// Migrations returns the SQL of every migration Migrate applies, keyed
	// by file name (names sort in version order), with the driver's table
	// names filled in.
	Migrations() (map[string]string, error)
}
