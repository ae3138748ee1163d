package harness

import (
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
