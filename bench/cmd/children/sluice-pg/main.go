// Command sluice-pg is sluice on Postgres for the comparison program, which
// builds it and runs it as a child process. It links sluice, pgxdriver and
// pgx and no other system or database library, so the memory the
// comparison reads from it is sluice's on Postgres alone.
package main

import (
	"context"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/sluicepg"
	"github.com/sluicehq/sluice/bench/internal/sluicesys"
)

var factories = map[string]harness.Factory{
	"sluice/pg":        sluicesys.Factory(sluicepg.Setup),
	"sluice-logged/pg": sluicesys.Factory(sluicepg.Setup, sluicesys.Logged[pgx.Tx]),
	"sluice-delete/pg": sluicesys.Factory(sluicepg.Setup, sluicesys.Deleting[pgx.Tx]),
}

func main() {
	harness.Exit(harness.ChildMain(context.Background(), os.Args[1:], os.Stdout, factories))
}
