// Command sluiceotel-pg is sluice on Postgres with its observability
// features on, for the comparison program: sluice-traced (sluiceotel's
// tracing and metrics, one log line per job) and sluice-floor (the
// OpenTelemetry SDK's own calls for each job, without sluiceotel). It is a
// program of its own so that plain sluice's links no OpenTelemetry.
package main

import (
	"context"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/otelsys"
	"github.com/sluicehq/sluice/bench/internal/sluicepg"
	"github.com/sluicehq/sluice/bench/internal/sluicesys"
)

var factories = map[string]harness.Factory{
	"sluice-traced/pg": sluicesys.Factory(sluicepg.Setup, otelsys.Traced[pgx.Tx]),
	"sluice-floor/pg":  sluicesys.Factory(sluicepg.Setup, otelsys.Floor[pgx.Tx]),
}

func main() {
	harness.Exit(harness.ChildMain(context.Background(), os.Args[1:], os.Stdout, factories))
}
