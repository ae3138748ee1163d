// Command sluice-sqlite is sluice on SQLite for the comparison program,
// which builds it and runs it as a child process. It links sluice,
// sqlitedriver and modernc.org/sqlite and no other system or database
// library (pgx included), so the memory the comparison reads from it is
// sluice's on SQLite alone.
package main

import (
	"context"
	"database/sql"
	"os"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/sluicesqlite"
	"github.com/sluicehq/sluice/bench/internal/sluicesys"
)

var factories = map[string]harness.Factory{
	"sluice/sqlite":        sluicesys.Factory(sluicesqlite.Setup),
	"sluice-logged/sqlite": sluicesys.Factory(sluicesqlite.Setup, sluicesys.Logged[*sql.Tx]),
	"sluice-delete/sqlite": sluicesys.Factory(sluicesqlite.Setup, sluicesys.Deleting[*sql.Tx]),
}

func main() {
	harness.Exit(harness.ChildMain(context.Background(), os.Args[1:], os.Stdout, factories))
}
