// The README's tuning fragment, built by TestREADMEGoBuilds inside a
// function that gives it what it names.
package readme

import "github.com/sluicehq/sluice"

func tuning(workers *sluice.Workers) *sluice.Config {
	// README
	return cfg
}
