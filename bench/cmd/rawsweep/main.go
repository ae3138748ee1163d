// Command rawsweep measures the comparison's ceiling (the systems raw and
// raw-delete) over a grid of batch sizes and connection counts, to choose
// the settings its child programs use for throughput. For each point it
// runs the comparison program's burn_down with the point's settings in
// the environment (SLUICE_RAW_BATCH, SLUICE_RAW_CONNS) and prints
//
//	SWEEP driver=<pg|sqlite> system=<raw|raw-delete> batch=<n> conns=<n> jobs_per_s=<number> rss_mib=<number>
//
// and, after each driver, the best point of each system:
//
//	BEST driver=<pg|sqlite> system=<raw|raw-delete> batch=<n> conns=<n> jobs_per_s=<number>
//
// Run it from the bench directory; bench/README.md gives the command that
// chose the settings.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/rawsys"
)

// defaultScale is the share of the full burn-down's backlog and window
// each driver's sweep uses unless -scale says otherwise: 100,000 jobs on
// Postgres and 50,000 on SQLite.
var defaultScale = map[string]float64{"pg": 0.1, "sqlite": 0.25}

type options struct {
	drivers, systems []string
	batches, conns   []int
	scale            float64
	reps             int
	compareArgs      []string // passed to every run of the comparison
	dir              string   // the bench module's directory
}

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "rawsweep:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("rawsweep", flag.ContinueOnError)
	drivers := fs.String("driver", "pg,sqlite", "comma-separated drivers to sweep")
	systems := fs.String("system", rawsys.Update+","+rawsys.Delete, "comma-separated systems to measure at each point")
	batches := fs.String("batch", "100,250,500,1000", "comma-separated batch sizes")
	conns := fs.String("conns", "1,2,4,8", "comma-separated connection counts")
	o := &options{dir: "."}
	fs.Float64Var(&o.scale, "scale", 0, "the comparison's -scale (default 0.1 on Postgres and 0.25 on SQLite: backlogs of 100,000 and 50,000 jobs)")
	fs.IntVar(&o.reps, "reps", 1, "the comparison's -reps at each point: the median is reported")
	dbURL := fs.String("database-url", "", "the comparison's -database-url (default its own)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("rawsweep: unexpected arguments %q", fs.Args())
	}
	o.drivers, o.systems = strings.Split(*drivers, ","), strings.Split(*systems, ",")
	var err error
	if o.batches, err = numbers("-batch", *batches); err != nil {
		return nil, err
	}
	if o.conns, err = numbers("-conns", *conns); err != nil {
		return nil, err
	}
	if o.reps < 1 || o.scale < 0 {
		return nil, fmt.Errorf("rawsweep: -reps must be positive and -scale not negative")
	}
	if *dbURL != "" {
		o.compareArgs = []string{"-database-url", *dbURL}
	}
	return o, nil
}

// numbers parses a comma-separated list of positive numbers.
func numbers(name, list string) ([]int, error) {
	var out []int
	for field := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("rawsweep: %s: %q is not a positive number", name, field)
		}
		out = append(out, n)
	}
	return out, nil
}

// point is one setting's figures for one system.
type point struct {
	settings       rawsys.Settings
	jobsPerS, rssM float64
}

// run builds the comparison program once and runs it at every point of
// the grid, one driver after the other.
func run(ctx context.Context, o *options, out, log io.Writer) error {
	tmp, err := os.MkdirTemp("", "sluice-rawsweep-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	compare := filepath.Join(tmp, "compare")
	build := exec.CommandContext(ctx, "go", "build", "-o", compare, "./cmd/compare")
	build.Dir, build.Stdout, build.Stderr = o.dir, log, log
	if err := build.Run(); err != nil {
		return fmt.Errorf("build the comparison (run from bench/): %w", err)
	}
	for _, driver := range o.drivers {
		scale := o.scale
		if scale == 0 {
			scale = defaultScale[driver]
		}
		best := map[string]point{}
		for _, conns := range o.conns {
			for _, batch := range o.batches {
				s := rawsys.Settings{Batch: batch, Conns: conns}
				fmt.Fprintf(log, "# %s batch=%d conns=%d\n", driver, batch, conns)
				figs, err := measure(ctx, compare, o, driver, scale, s)
				if err != nil {
					return err
				}
				for _, system := range o.systems {
					p := point{settings: s, jobsPerS: figs[system+" jobs_per_s"], rssM: figs[system+" rss_mib"]}
					fmt.Fprintf(out, "SWEEP driver=%s system=%s batch=%d conns=%d jobs_per_s=%s rss_mib=%s\n",
						driver, system, batch, conns, harness.FormatValue(p.jobsPerS), harness.FormatValue(p.rssM))
					if p.jobsPerS > best[system].jobsPerS {
						best[system] = p
					}
				}
			}
		}
		for _, system := range o.systems {
			b := best[system]
			fmt.Fprintf(out, "BEST driver=%s system=%s batch=%d conns=%d jobs_per_s=%s\n",
				driver, system, b.settings.Batch, b.settings.Conns, harness.FormatValue(b.jobsPerS))
		}
	}
	return nil
}

// measure runs the comparison's burn_down of o.systems on driver with
// settings s and returns its figures, keyed "system metric".
func measure(ctx context.Context, compare string, o *options, driver string, scale float64, s rawsys.Settings) (map[string]float64, error) {
	args := append([]string{
		"-scenario", "burn_down", "-driver", driver, "-system", strings.Join(o.systems, ","),
		"-scale", strconv.FormatFloat(scale, 'g', -1, 64), "-reps", strconv.Itoa(o.reps),
	}, o.compareArgs...)
	cmd := exec.CommandContext(ctx, compare, args...)
	cmd.Dir = o.dir
	cmd.Env = append(os.Environ(),
		rawsys.BatchEnv+"="+strconv.Itoa(s.Batch), rawsys.ConnsEnv+"="+strconv.Itoa(s.Conns))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("compare %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	figs := parseBench(stdout.Bytes())
	for _, system := range o.systems {
		if figs[system+" jobs_per_s"] <= 0 {
			return nil, fmt.Errorf("compare %s gave no throughput for %s:\n%s", strings.Join(args, " "), system, stdout.Bytes())
		}
	}
	return figs, nil
}

// parseBench reads the comparison's BENCH lines into values keyed
// "system metric"; other lines, and figures that are not numbers, it
// leaves out.
func parseBench(out []byte) map[string]float64 {
	figs := map[string]float64{}
	s := bufio.NewScanner(bytes.NewReader(out))
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "BENCH ")
		if !ok {
			continue
		}
		fields := map[string]string{}
		for f := range strings.FieldsSeq(rest) {
			k, v, _ := strings.Cut(f, "=")
			fields[k] = v
		}
		if v, err := strconv.ParseFloat(fields["value"], 64); err == nil {
			figs[fields["system"]+" "+fields["metric"]] = v
		}
	}
	return figs
}
