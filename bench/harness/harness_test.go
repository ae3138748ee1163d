package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"
)

func TestPercentile(t *testing.T) {
	t.Parallel()
	values := []float64{9, 1, 8, 2, 7, 3, 6, 4, 5, 10}
	cases := []struct {
		p    float64
		want float64
	}{{50, 5}, {99, 10}, {10, 1}, {100, 10}, {0, 1}}
	for _, c := range cases {
		if got := Percentile(values, c.p); got != c.want {
			t.Errorf("Percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("Percentile(nil) = %v, want 0", got)
	}
	if values[0] != 9 {
		t.Error("Percentile sorted its argument")
	}
}

func TestBenchLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		v    float64
		want string
	}{
		{12345.678, "BENCH system=sluice driver=pg scenario=burn_down metric=jobs_per_s value=12346"},
		{3.14159, "BENCH system=sluice driver=pg scenario=burn_down metric=jobs_per_s value=3.14"},
		{0.0123456, "BENCH system=sluice driver=pg scenario=burn_down metric=jobs_per_s value=0.0123"},
		{2e9, "BENCH system=sluice driver=pg scenario=burn_down metric=jobs_per_s value=2000000000"},
	}
	for _, c := range cases {
		if got := BenchLine("sluice", "pg", "burn_down", "jobs_per_s", c.v); got != c.want {
			t.Errorf("BenchLine(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestChildMainRejectsBadInput(t *testing.T) {
	t.Parallel()
	cases := [][]string{
		{"-phase", "measure", "-spec", "{"},
		{"-phase", "measure", "-spec", `{"system":"nope","driver":"pg"}`},
		{"-phase", "nope", "-spec", `{"system":"nope","driver":"pg"}`},
	}
	for _, args := range cases {
		if err := ChildMain(t.Context(), args, nil, map[string]Factory{}); err == nil {
			t.Errorf("ChildMain(%q) succeeded", args)
		}
	}
}

func TestFormatValueOfNothingIsNotApplicable(t *testing.T) {
	t.Parallel()
	if got := FormatValue(math.NaN()); got != "n/a" {
		t.Errorf("FormatValue(NaN) = %q", got)
	}
}

// TestUnsupportedMeasurement checks that a system saying it cannot do a
// measurement makes the child print so and succeed, and that the check of
// a child's output accepts it but for the plain burn-down.
func TestUnsupportedMeasurement(t *testing.T) {
	t.Parallel()
	factories := map[string]Factory{"none/pg": func(context.Context, *Spec) (System, error) {
		return nil, fmt.Errorf("no wake-up: %w", ErrUnsupported)
	}}
	for _, spec := range ExerciseSpecs(Spec{System: "none", Driver: "pg"}) {
		js, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		for _, phase := range []string{"prepare", "measure"} {
			if err := ChildMain(t.Context(), []string{"-phase", phase, "-spec", string(js)}, &out, factories); err != nil {
				t.Fatalf("%s %s: %v", spec.Scenario, phase, err)
			}
		}
		want := "UNSUPPORTED system=none driver=pg scenario=" + spec.Scenario + "\n"
		if out.String() != want {
			t.Errorf("%s printed %q, want %q", spec.Scenario, out.String(), want)
		}
		err = CheckFigures(&spec, out.Bytes())
		if plain := spec.Scenario == "burn_down"; (err != nil) != plain {
			t.Errorf("CheckFigures(%s) = %v", spec.Scenario, err)
		}
	}
}
