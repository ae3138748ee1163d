package sluicepb

import (
	"database/sql"

	"github.com/sluicehq/sluice/driver"
)

// DriverOf returns the driver j uses, over the app's pools, for the
// benchmarks of package sluicepb_test.
func DriverOf(j *Jobs) driver.Driver[*sql.Tx] {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.drv
}
