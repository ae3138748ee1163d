// Command sluiceotel-sqlite is sluice on SQLite with its observability
// features on, for the comparison program: sluice-traced (sluiceotel's
// tracing and metrics, one log line per job) and sluice-floor (the
// OpenTelemetry SDK's own calls for each job, without sluiceotel). It is a
// program of its own so that plain sluice's links no OpenTelemetry.
package main

import (
	"context"
	"database/sql"
	"os"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/otelsys"
	"github.com/sluicehq/sluice/bench/internal/sluicesqlite"
	"github.com/sluicehq/sluice/bench/internal/sluicesys"
)

var factories = map[string]harness.Factory{
	"sluice-traced/sqlite": sluicesys.Factory(sluicesqlite.Setup, otelsys.Traced[*sql.Tx]),
	"sluice-floor/sqlite":  sluicesys.Factory(sluicesqlite.Setup, otelsys.Floor[*sql.Tx]),
}

func main() {
	harness.Exit(harness.ChildMain(context.Background(), os.Args[1:], os.Stdout, factories))
}
