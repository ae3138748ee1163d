package rowcodec

import (
	"encoding/json"

	"github.com/sluicehq/sluice/driver"
)

// ProgressJSON returns the progress of u as stored in the progress column:
// the claim's attempt, its time in UTC at microsecond precision, and its
// message cleaned by the text rule (see package driver): Postgres cannot
// store a NUL character in jsonb.
func ProgressJSON(u *driver.JobProgressUpdate) ([]byte, error) {
	p := u.Progress
	p.Attempt = u.Attempt
	p.At = Stored(p.At)
	p.Message = driver.CleanText(p.Message, 0)
	return json.Marshal(p)
}

// Progress decodes a job's progress column: a JSON object, or nothing. Its
// time comes back in UTC, as the driver contract requires.
func Progress(data []byte) (*driver.JobProgress, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var p *driver.JobProgress
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	if p != nil {
		p.At = p.At.UTC()
	}
	return p, nil
}
