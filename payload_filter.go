package sluice

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/driver"
)

// Bounds of JobFilter.Payload.
const (
	// MaxPayloadConditions is the most conditions a JobFilter.Payload
	// holds.
	MaxPayloadConditions = 8
	// MaxPayloadPathKeys is the most keys a payload path has.
	MaxPayloadPathKeys = 8
)

// payloadKeyRE is a key of a payload path.
var payloadKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// payloadMatches validates the conditions of JobFilter.Payload and
// returns them as the driver takes them, sorted by path so that one
// filter makes one statement.
func payloadMatches(conds map[string]any) ([]driver.PayloadMatch, error) {
	if len(conds) > MaxPayloadConditions {
		return nil, &FilterError{Field: "Payload", Reason: fmt.Sprintf("%d conditions; at most %d", len(conds), MaxPayloadConditions)}
	}
	var out []driver.PayloadMatch
	for _, path := range slices.Sorted(maps.Keys(conds)) {
		field := fmt.Sprintf("Payload[%q]", path)
		keys := strings.Split(path, ".")
		if len(keys) > MaxPayloadPathKeys {
			return nil, &FilterError{Field: field, Reason: fmt.Sprintf("a path has at most %d keys", MaxPayloadPathKeys)}
		}
		for _, k := range keys {
			if !payloadKeyRE.MatchString(k) {
				return nil, &FilterError{Field: field,
					Reason: "a path is keys of 1 to 64 letters, digits, _ or -, joined by dots (customer.id)"}
			}
		}
		value, err := json.Marshal(conds[path])
		if err != nil || len(value) == 0 || value[0] == '{' || value[0] == '[' {
			return nil, &FilterError{Field: field, Reason: "the value must be a JSON string, number, true, false or null"}
		}
		out = append(out, driver.PayloadMatch{Path: keys, Value: value})
	}
	return out, nil
}

// PayloadValue returns the value of a payload condition given as text,
// as the web API's query and the sluice command take it: the text itself
// when it is a JSON string, number, true, false or null (42 is a number,
// "42" with its quotes a string), and the text as a JSON string otherwise
// (ada is "ada", and so is {"a": 1}).
func PayloadValue(text string) json.RawMessage {
	raw := json.RawMessage(text)
	if text == "" || text[0] == '{' || text[0] == '[' || !json.Valid(raw) || strings.TrimSpace(text) != text {
		raw, _ = json.Marshal(text) // a string always encodes
	}
	return raw
}

// checkPayloadFilter refuses a payload filter on a topic this client
// encrypts: its payloads are ciphertext, which no condition can match.
func (c *crypt) checkPayloadFilter(f *JobFilter) error {
	if f == nil || len(f.Payload) == 0 {
		return nil
	}
	for i, t := range f.Topics {
		if c.topics[t] {
			return &FilterError{Field: fmt.Sprintf("Topics[%d]", i),
				Reason: fmt.Sprintf("topic %q is encrypted: its payloads cannot be filtered", t)}
		}
	}
	return nil
}
