// Package rowcodec decodes the JSON columns drivers store.
package rowcodec

import (
	"encoding/json"

	"github.com/sluicehq/sluice/driver"
)

// Errors decodes a job's errors column: a JSON array of attempt errors, or
// nothing. Times come back in UTC, as the driver contract requires.
func Errors(data []byte) ([]driver.AttemptError, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var errs []driver.AttemptError
	if err := json.Unmarshal(data, &errs); err != nil {
		return nil, err
	}
	for i := range errs {
		errs[i].At = errs[i].At.UTC()
	}
	return errs, nil
}
