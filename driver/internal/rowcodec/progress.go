package rowcodec

import (
	"encoding/json"
	"strings"

	"github.com/sluicehq/sluice/driver"
)

// ProgressJSON returns the progress of u as stored in the progress column:
// the claim's attempt, its time in UTC at microsecond precision, and no NUL
// character, which Postgres cannot store in jsonb (a NUL becomes U+FFFD).
func ProgressJSON(u *driver.JobProgressUpdate) ([]byte, error) {
	p := u.Progress
	p.Attempt = u.Attempt
	p.At = Stored(p.At)
	p.Message = strings.ReplaceAll(p.Message, "\x00", "\uFFFD")
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
