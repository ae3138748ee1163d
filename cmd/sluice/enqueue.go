package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sluicehq/sluice"
)

func enqueueCommands() []command {
	return []command{{name: "enqueue", args: "TOPIC [PAYLOAD]", summary: "enqueue a job (payload JSON as an argument, --payload-file, or stdin with -)", run: runEnqueue}}
}

// enqueueJSON is enqueue's --json output.
type enqueueJSON struct {
	Job       *sluice.JobRow `json:"job"`
	Duplicate bool           `json:"duplicate"`
}

func runEnqueue(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("enqueue", "TOPIC [PAYLOAD]")
	var opts sluice.EnqueueOptions
	var tags listValue
	meta := pairsValue{}
	fs.StringVar(&opts.Queue, "queue", sluice.QueueDefault, "the queue to enqueue into")
	fs.IntVar(&opts.Priority, "priority", 0, "the job's priority (smaller runs first)")
	fs.Var(timeValue{&opts.RunAt, time.Now}, "run-at", "when the job may run: RFC 3339, a date, or a duration from now (10m)")
	maxRetries := fs.Int("max-retries", 0, "retries after the first attempt, 0 for none (without the flag: the default, 3)")
	fs.StringVar(&opts.UniqueKey, "unique-key", "", "enqueue nothing if a live job has this key")
	fs.StringVar(&opts.Key, "key", "", "the job's key: the customer, account or order its limits per key count it under")
	sequence := fs.String("sequence", "", "hold or continue: run the job in the sequence of its --key, one at a time in order")
	fs.Var(&tags, "tag", "a tag (repeat, or separate with commas)")
	fs.Var(meta, "meta", "metadata key=value, a string (repeat for several keys)")
	metaJSON := fs.String("metadata", "", "metadata as a JSON object (merged under --meta)")
	payloadFile := fs.String("payload-file", "", "read the payload from this file (- for stdin)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		return usageErrorf("enqueue wants a topic and at most one payload")
	}
	payload, err := c.payload(pos[1:], *payloadFile)
	if err != nil {
		return err
	}
	if opts.Metadata, err = metadata(*metaJSON, meta); err != nil {
		return err
	}
	opts.Tags = tags
	opts.Sequence = sluice.SequencePolicy(*sequence)
	if opts.MaxRetries, err = retries(fs, *maxRetries); err != nil {
		return err
	}
	jc, done, err := c.client(ctx, opts.Queue)
	if err != nil {
		return err
	}
	defer done()
	res, err := jc.Enqueue(ctx, sluice.RawArgs{TopicName: pos[0], Payload: payload}, &opts)
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.out(), enqueueJSON{Job: res.Job, Duplicate: res.Duplicate})
	}
	if res.Duplicate {
		fmt.Fprintf(c.out(), "not enqueued: job %s (%s) has the unique key %q\n", res.Job.ID, res.Job.Status, res.Job.UniqueKey)
		return nil
	}
	key := ""
	if res.Job.Key != "" {
		key = ", key " + res.Job.Key
		if res.Job.Sequence != "" {
			key += " in sequence (" + string(res.Job.Sequence) + ")"
		}
	}
	fmt.Fprintf(c.out(), "enqueued %s (%s in %s%s, runs at %s)\n", res.Job.ID, res.Job.Topic, res.Job.Queue, key, stamp(res.Job.RunAt))
	return nil
}

// retries returns the EnqueueOptions.MaxRetries that --max-retries n asks
// for: 0 is none (sluice.NoRetries), as in the web API, and the flag's
// absence the default.
func retries(fs *flag.FlagSet, n int) (int, error) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "max-retries" })
	switch {
	case !given:
		return 0, nil
	case n < 0:
		return 0, usageErrorf("--max-retries must not be negative (0 means no retries)")
	case n == 0:
		return sluice.NoRetries, nil
	}
	return n, nil
}

// payload returns the payload given as an argument, or read from file ("-"
// is stdin); {} when none is given. It must be JSON.
func (c *cli) payload(arg []string, file string) (json.RawMessage, error) {
	var raw []byte
	switch {
	case len(arg) > 0 && file != "":
		return nil, usageErrorf("give the payload as an argument or with --payload-file, not both")
	case len(arg) > 0 && arg[0] == "-", file == "-":
		b, err := io.ReadAll(c.stdin)
		if err != nil {
			return nil, fmt.Errorf("read payload: %w", err)
		}
		raw = b
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, usageErrorf("payload: %v", err)
		}
		raw = b
	case len(arg) > 0:
		raw = []byte(arg[0])
	default:
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(raw) {
		return nil, usageErrorf("payload is not JSON: %.80q", raw)
	}
	return raw, nil
}

// metadata returns the metadata given as a JSON object and as pairs, the
// pairs overriding.
func metadata(obj string, pairs map[string]string) (map[string]any, error) {
	var m map[string]any
	if obj != "" {
		if err := json.Unmarshal([]byte(obj), &m); err != nil || m == nil {
			return nil, usageErrorf("--metadata: want a JSON object")
		}
	}
	for k, v := range pairs {
		if m == nil {
			m = map[string]any{}
		}
		m[k] = v
	}
	return m, nil
}
