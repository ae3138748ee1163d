package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Exercise runs every kind of measurement, tiny, for the system that base
// names (base.System, base.Driver), each on a database that fresh prepares
// in the Spec (setting DB and, on Postgres, Schema) and that its cleanup
// removes. It returns an error unless each printed every figure it owes,
// positive. Tests of each System use it.
func Exercise(ctx context.Context, factories map[string]Factory, base Spec, fresh func(*Spec) (cleanup func(), err error)) error {
	for _, spec := range ExerciseSpecs(base) {
		if err := exerciseOne(ctx, factories, &spec, fresh); err != nil {
			return fmt.Errorf("%s: %w", spec.Scenario, err)
		}
	}
	return nil
}

// ExerciseSpecs returns the tiny measurements Exercise runs, one of each
// kind, for the system and driver base names. Tests of child programs
// that are not Go run them through the program and check each output with
// CheckFigures.
func ExerciseSpecs(base Spec) []Spec {
	specs := []Spec{
		{Scenario: "burn_down", Kind: KindBurnDown, Tuned: true, Backlog: 300, Window: time.Minute},
		{Scenario: "bloat", Kind: KindBurnDown, Backlog: 200, Finished: 500, Window: time.Minute},
		{Scenario: "enqueue_single_4", Kind: KindEnqueue, Jobs: 100, Goroutines: 4, Window: time.Minute},
		{Scenario: "enqueue_many", Kind: KindEnqueueMany, Jobs: 250, Batch: 100, Window: time.Minute},
		{Scenario: "latency", Kind: KindLatency, Jobs: 5, Gap: 5 * time.Millisecond},
	}
	for i := range specs {
		specs[i].System, specs[i].Driver = base.System, base.Driver
	}
	return specs
}

func exerciseOne(ctx context.Context, factories map[string]Factory, spec *Spec, fresh func(*Spec) (func(), error)) error {
	cleanup, err := fresh(spec)
	if err != nil {
		return err
	}
	defer cleanup()
	js, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	for _, phase := range []string{"prepare", "measure"} {
		if err := ChildMain(ctx, []string{"-phase", phase, "-spec", string(js)}, &out, factories); err != nil {
			return err
		}
	}
	return CheckFigures(spec, out.Bytes())
}

// CheckFigures returns an error unless out, a child's output for spec,
// holds every figure spec's kind owes, each positive, and, for a
// burn-down, a worked figure equal to the backlog: the small backlogs of
// Exercise are drained whole within their window. A system may say it
// cannot do a measurement (UnsupportedLine) but for the plain burn-down,
// which every queue can do. Tests of child programs that are not Go use it
// on their output.
func CheckFigures(spec *Spec, out []byte) error {
	if bytes.Contains(out, []byte(UnsupportedLine(spec.System, spec.Driver, spec.Scenario)+"\n")) {
		if spec.Kind == KindBurnDown && spec.Finished == 0 {
			return fmt.Errorf("a queue that cannot burn down a backlog is no queue:\n%s", out)
		}
		return nil
	}
	want := []string{"jobs_per_s"}
	switch spec.Kind {
	case KindLatency:
		want = []string{"p50_ms", "p99_ms"}
	case KindBurnDown:
		want = append(want, "worked")
	}
	for _, metric := range want {
		prefix := fmt.Sprintf("BENCH system=%s driver=%s scenario=%s metric=%s value=", spec.System, spec.Driver, spec.Scenario, metric)
		i := strings.Index(string(out), prefix)
		if i < 0 {
			return fmt.Errorf("no %s figure in:\n%s", metric, out)
		}
		value, _, _ := strings.Cut(string(out[i+len(prefix):]), "\n")
		v, err := strconv.ParseFloat(value, 64)
		if err != nil || v <= 0 {
			return fmt.Errorf("%s figure %q is not a positive number", metric, value)
		}
		if metric == "worked" && int(v) != spec.Backlog {
			return fmt.Errorf("worked %s of a backlog of %d", value, spec.Backlog)
		}
	}
	return nil
}
