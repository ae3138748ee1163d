// Command river-pg is River on Postgres (riverpgxv5) for the comparison
// program, which builds it and runs it as a child process. It links River,
// its pgx driver and pgx and no other system or database library, so the
// memory the comparison reads from it is River's on Postgres alone.
package main

import (
	"context"
	"os"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/riverpg"
)

var factories = map[string]harness.Factory{"river/pg": riverpg.Factory()}

func main() {
	harness.Exit(harness.ChildMain(context.Background(), os.Args[1:], os.Stdout, factories))
}
