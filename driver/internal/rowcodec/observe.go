package rowcodec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// LogsJSON returns logs as stored in the logs column: a JSON object with
// the records, each time in UTC at microsecond precision and each message
// cleaned by the text rule, and the count of dropped records. Attributes
// that break the text rule are cleaned too: Postgres cannot store a NUL
// character in jsonb.
func LogsJSON(logs *driver.JobLogs) ([]byte, error) {
	// Written by hand rather than by json.Marshal, whose reflection was a
	// visible part of a completion's cost; the bytes are the same, but
	// for HTML characters in attributes, which are left unescaped.
	b := make([]byte, 0, 64+len(logs.Records)*128)
	b = append(b, `{"records":[`...)
	for i := range logs.Records {
		r := &logs.Records[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"attempt":`...)
		b = strconv.AppendInt(b, int64(r.Attempt), 10)
		b = append(b, `,"level":`...)
		b = driver.AppendJSONString(b, r.Level.String())
		t := Stored(r.Time)
		if y := t.Year(); y < 0 || y > 9999 {
			return nil, fmt.Errorf("log record %d: time %v: year outside of range [0,9999]", i, t)
		}
		b = append(b, `,"time":"`...)
		b = t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","msg":`...)
		b = driver.AppendJSONString(b, driver.CleanText(r.Message, 0))
		if attrs := r.Attrs; len(attrs) > 0 {
			if driver.CheckJSON(attrs) != nil {
				attrs = cleanJSON(attrs)
			}
			buf := bytes.NewBuffer(append(b, `,"attrs":`...))
			if err := json.Compact(buf, attrs); err != nil {
				return nil, fmt.Errorf("log record %d: attributes: %w", i, err)
			}
			b = buf.Bytes()
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if logs.Dropped != 0 {
		b = append(b, `,"dropped":`...)
		b = strconv.AppendInt(b, int64(logs.Dropped), 10)
	}
	return append(b, '}'), nil
}

// Logs decodes a job's logs column: a JSON object, or nothing. Times come
// back in UTC, as the driver contract requires.
func Logs(data []byte) ([]driver.LogRecord, int, error) {
	if len(data) == 0 {
		return nil, 0, nil
	}
	var logs driver.JobLogs
	if err := json.Unmarshal(data, &logs); err != nil {
		return nil, 0, err
	}
	for i := range logs.Records {
		logs.Records[i].Time = logs.Records[i].Time.UTC()
	}
	if len(logs.Records) == 0 {
		logs.Records = nil
	}
	return logs.Records, logs.Dropped, nil
}

// cleanJSON returns the encoded JSON b with invalid UTF-8 replaced by
// U+FFFD and each escaped NUL character (\u0000, not an escaped backslash
// followed by "u0000") by the escape of U+FFFD.
func cleanJSON(b []byte) []byte {
	b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if i+6 <= len(b) && string(b[i:i+6]) == `\u0000` {
			out = append(out, `\ufffd`...)
			i += 5
			continue
		}
		out = append(out, b[i], b[i+1])
		i++
	}
	return out
}

// StringsJSON returns ss (tags, dependencies) as a JSON array, nil when
// there are none.
func StringsJSON(ss []string) []byte {
	if len(ss) == 0 {
		return nil
	}
	b, _ := json.Marshal(ss) // strings always encode
	return b
}

// Tags decodes tags stored as a JSON array, or nothing.
func Tags(data []byte) ([]string, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var tags []string
	if err := json.Unmarshal(data, &tags); err != nil {
		return nil, err
	}
	if len(tags) == 0 {
		return nil, nil
	}
	return tags, nil
}
