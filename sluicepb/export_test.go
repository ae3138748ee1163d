package sluicepb

import (
	"database/sql"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// DriverOf returns the driver j uses, over the app's pools, for the
// benchmarks of package sluicepb_test.
func DriverOf(j *Jobs) driver.Driver[*sql.Tx] {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.drv
}

// SetYieldMax sets how long j's claims wait for writing requests, beyond
// what Config allows, for tests that must tell a held claim from one
// whose wait ran out. Call it before the app serves.
func SetYieldMax(j *Jobs, d time.Duration) { j.gate.max = d }
