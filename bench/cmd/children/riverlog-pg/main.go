// Command riverlog-pg is River on Postgres with one log line per job kept
// with the job by River's riverlog middleware, the variant river-logged,
// for the comparison program. It is a program of its own so that plain
// River's links no riverlog, and links no OpenTelemetry, as sluice-logged's
// program does not.
package main

import (
	"context"
	"os"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/riverlogs"
	"github.com/sluicehq/sluice/bench/internal/riverpg"
)

var factories = map[string]harness.Factory{"river-logged/pg": riverpg.Factory(riverlogs.Logged)}

func main() {
	harness.Exit(harness.ChildMain(context.Background(), os.Args[1:], os.Stdout, factories))
}
