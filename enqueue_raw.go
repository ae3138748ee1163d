package sluice

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/sluicehq/sluice/internal/strictjson"
)

// RawArgs are job arguments given by topic name and JSON rather than by
// type, for callers that have no Go type for them: an HTTP API, a command
// line, another language. Enqueue, EnqueueTx, EnqueueMany and EnqueueManyTx
// take them like any JobArgs, with the same checks and limits (the
// payload's size, NUL characters, options, queue).
//
// The payload must be one JSON value in valid UTF-8, with no object that
// has two members of one name (names equal under encoding/json's case
// folding, such as "user" and "User", count as one) and no escaped lone
// UTF-16 surrogate: each would mean one thing to one reader of the stored
// JSON and another to the next. It is stored compacted. When the
// enqueuing client has workers, RawArgs are checked against them:
//
//   - a topic the client has a worker for must have a payload that decodes
//     into that worker's argument type with encoding/json, unknown object
//     fields refused (a misspelt field would otherwise run the job with a
//     zero value), and each member that fills a field must name it exactly
//     ("User" fills the field tagged "user" for encoding/json, but a rule
//     or a reader in another language would not see it there); otherwise
//     the error matches ErrInvalidArgs and is an *ArgsError saying why; a
//     topic whose worker was added with AddRawWorker takes any JSON
//     payload;
//   - a topic it has no worker for is refused with an error matching
//     ErrUnknownTopic: it cannot be checked, and a misspelt topic would
//     wait forever for a worker.
//
// A client without workers (an insert-only client) cannot check a payload
// and accepts any topic, as it accepts any typed JobArgs: use one to enqueue
// by name jobs that only other processes work.
type RawArgs struct {
	// TopicName is the job's topic.
	TopicName string
	// Payload is the job's arguments as JSON; empty means {}.
	Payload json.RawMessage
}

// Topic returns TopicName.
func (a RawArgs) Topic() string { return a.TopicName }

// MarshalJSON returns Payload compacted ({} when empty), or an error if it
// is not exactly one JSON value as RawArgs describes.
func (a RawArgs) MarshalJSON() ([]byte, error) {
	if len(bytes.TrimSpace(a.Payload)) == 0 {
		return []byte("{}"), nil
	}
	if err := strictjson.Check(a.Payload); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, a.Payload); err != nil {
		return nil, fmt.Errorf("payload is not JSON: %w", err)
	}
	return buf.Bytes(), nil
}

// rawArgs returns args as RawArgs, if they are.
func rawArgs(args JobArgs) (RawArgs, bool) {
	switch a := args.(type) {
	case RawArgs:
		return a, true
	case *RawArgs:
		if a != nil {
			return *a, true
		}
	}
	return RawArgs{}, false
}

// checkRaw checks the encoded payload of RawArgs of topic against this
// client's worker for it (see RawArgs).
func (c *Client[TTx]) checkRaw(topic string, payload []byte) error {
	if len(c.topics) == 0 {
		return nil // an insert-only client knows no argument types
	}
	unit := c.cfg.Workers.units[topic]
	if unit == nil {
		return &UnknownTopicError{Topic: topic, Topics: c.Topics()}
	}
	if err := unit.check(payload); err != nil {
		return &ArgsError{Topic: topic, Err: err}
	}
	return nil
}

// checkArgs returns the function that checks a payload of RawArgs for a
// worker of T: it must decode into T, without unknown fields, each member
// naming its field exactly.
func checkArgs[T JobArgs]() func(payload []byte) error {
	fields := strictjson.NewFields(reflect.TypeFor[T]())
	return func(payload []byte) error {
		var args T
		if err := fields.Check(payload); err != nil {
			return fmt.Errorf("payload does not decode into %T: %w", args, err)
		}
		dec := json.NewDecoder(bytes.NewReader(payload))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&args); err != nil {
			return fmt.Errorf("payload does not decode into %T: %w", args, err)
		}
		return nil
	}
}

// MaxPayloadBytes returns the largest JSON payload this client enqueues:
// Config.MaxPayloadBytes, or its default.
func (c *Client[TTx]) MaxPayloadBytes() int { return c.cfg.MaxPayloadBytes }

// Topics returns the topics this client has workers for, sorted; none for
// an insert-only client.
func (c *Client[TTx]) Topics() []string { return append([]string(nil), c.topics...) }
