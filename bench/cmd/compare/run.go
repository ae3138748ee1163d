package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/bench/harness"
)

// runner runs measurements in child processes and owns the databases they
// use: a Postgres schema or a SQLite file per system per repetition,
// removed afterwards.
type runner struct {
	dbURL  string
	admin  *pgx.Conn // creates, analyzes and drops the schemas
	tmp    string    // holds the SQLite files and the child programs
	seq    int
	limit  time.Duration // bounds each child process
	logf   func(format string, args ...any)
	schema string // prefix of schema names
	// budget adds the per-job figures of budgetMetrics to burn-downs on
	// Postgres; statements says the server counts statements.
	budget, statements bool
	// node and nodeChild are the Node binary and the child program of the
	// systems that run on Node (nodeSystems), set by findNode.
	node, nodeChild string
}

// measurement is what one child measured.
type measurement map[string]float64

// measure runs one system through one scenario on a fresh database.
func (r *runner) measure(ctx context.Context, driver, system string, sc *scenario) (measurement, error) {
	r.seq++
	spec := sc.spec
	spec.System, spec.Driver, spec.Scenario = system, driver, sc.name
	var cleanup func()
	switch driver {
	case "pg":
		if p, ok := asynqSystems[system]; ok {
			var err error
			if cleanup, err = r.startRedis(ctx, p, &spec); err != nil {
				return nil, err
			}
			break
		}
		spec.DB = r.dbURL
		spec.Schema = fmt.Sprintf("%s_%d", r.schema, r.seq)
		if _, err := r.admin.Exec(ctx, "CREATE SCHEMA "+spec.Schema); err != nil {
			return nil, fmt.Errorf("create schema: %w", err)
		}
		cleanup = func() {
			_, err := r.admin.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+spec.Schema+" CASCADE")
			if err != nil {
				r.logf("drop schema %s: %v", spec.Schema, err)
			}
		}
	case "sqlite":
		spec.DB = filepath.Join(r.tmp, fmt.Sprintf("%s-%s-%d.db", system, sc.name, r.seq))
		cleanup = func() {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				_ = os.Remove(spec.DB + suffix)
			}
		}
	}
	defer cleanup()

	if _, err := r.child(ctx, &spec, "prepare"); err != nil {
		return nil, err
	}
	if spec.Schema != "" {
		if err := r.analyze(ctx, spec.Schema); err != nil {
			return nil, err
		}
	}
	budget := r.budget && budgetApplies(&spec) && spec.Schema != ""
	var before pgUsage
	if budget {
		var err error
		if before, err = r.usage(ctx); err != nil {
			return nil, err
		}
	}
	run, err := r.child(ctx, &spec, "measure")
	if err != nil {
		return nil, err
	}
	m, err := parseFigures(run.out, &spec)
	if err != nil {
		return nil, err // harness.ErrUnsupported among others
	}
	// A child that works in processes of its own reports their memory
	// with its own; the kernel's figure covers the child alone.
	if _, ok := m["rss_mib"]; !ok {
		m["rss_mib"] = run.rss
	}
	switch {
	case budget:
		time.Sleep(budgetSettle)
		after, err := r.usage(ctx)
		if err != nil {
			return nil, err
		}
		addBudget(m, before, after, run.cpu)
	case r.budget && budgetApplies(&spec):
		noBudget(m) // not on Postgres
	}
	return m, nil
}

// analyze vacuums and analyzes every table of schema, as the autovacuum
// daemon would after a bulk load; this server may run without it.
func (r *runner) analyze(ctx context.Context, schema string) error {
	rows, err := r.admin.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = $1`, schema)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, t := range tables {
		if _, err := r.admin.Exec(ctx, "VACUUM ANALYZE "+pgx.Identifier{schema, t}.Sanitize()); err != nil {
			return fmt.Errorf("vacuum %s.%s: %w", schema, t, err)
		}
	}
	return nil
}

// childRun is what one child process printed and used.
type childRun struct {
	out []byte
	rss float64       // peak resident set size, MiB
	cpu time.Duration // user and system time, with its children's it waited for
}

// child runs one phase of spec in a child process and returns its output
// and what it used.
func (r *runner) child(ctx context.Context, spec *harness.Spec, phase string) (childRun, error) {
	js, err := json.Marshal(spec)
	if err != nil {
		return childRun{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.limit)
	defer cancel()
	prog, args := filepath.Join(r.tmp, program(spec.System, spec.Driver)), []string(nil)
	if slices.Contains(nodeSystems, spec.System) {
		prog, args = r.node, []string{r.nodeChild}
	}
	cmd := exec.CommandContext(ctx, prog, append(args, "-phase", phase, "-spec", string(js))...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return childRun{}, fmt.Errorf("%s %s/%s %s: %w\n%s", phase, spec.System, spec.Driver, spec.Scenario, err, stderr.Bytes())
	}
	run := childRun{out: stdout.Bytes(), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		run.rss = float64(ru.Maxrss) / 1024 // Maxrss is in KiB on Linux
	}
	return run, nil
}

// parseFigures reads a child's BENCH lines into metric values. It returns
// harness.ErrUnsupported if the child said its system cannot do the
// measurement.
func parseFigures(out []byte, spec *harness.Spec) (measurement, error) {
	if bytes.Contains(out, []byte(harness.UnsupportedLine(spec.System, spec.Driver, spec.Scenario)+"\n")) {
		return nil, fmt.Errorf("%s/%s %s: %w", spec.System, spec.Driver, spec.Scenario, harness.ErrUnsupported)
	}
	figs, err := parseBench(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("%s/%s %s: %w", spec.System, spec.Driver, spec.Scenario, err)
	}
	m := measurement{}
	for _, f := range figs {
		if f.system == spec.System && f.driver == spec.Driver && f.scenario == spec.Scenario {
			m[f.metric] = f.value
		}
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("%s/%s %s printed no figures:\n%s", spec.System, spec.Driver, spec.Scenario, out)
	}
	return m, nil
}

// childrenDir holds the main package of each child program but River on
// SQLite's, relative to the bench module's directory.
const childrenDir = "cmd/children"

// program names the child program that measures system on driver: the
// directory of its main package in childrenDir, and its file in r.tmp.
// A variant of sluice lives in the program variants names; asynq's
// systems in asynqProgram, and raw-delete in raw's.
func program(system, driver string) string {
	if _, ok := asynqSystems[system]; ok {
		return asynqProgram
	}
	if p, ok := variants[system]; ok {
		system = p
	}
	if system == "raw-delete" {
		system = "raw"
	}
	return system + "-" + driver
}

// nodeSystems are the systems that run on Node: their child program is
// nodeDir's child.mjs, run by the Node binary that nodeDir's packages
// install (npm ci), with no build step.
var nodeSystems = []string{"graphile-worker", "pg-boss"}

// nodeDir holds the Node systems' child program and packages, relative to
// the bench module's directory.
const nodeDir = "node"

// findNode finds the Node binary and child program in dir, a directory
// like nodeDir, and fails unless npm ci has installed its packages.
func (r *runner) findNode(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	child := filepath.Join(abs, "child.mjs")
	if _, err := os.Stat(child); err != nil {
		return fmt.Errorf("the Node systems' child program not found (run from bench/): %w", err)
	}
	node := filepath.Join(abs, "node_modules", ".bin", "node")
	for _, p := range append([]string{node}, nodeSystems...) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(abs, "node_modules", p)
		}
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("the Node systems' packages are not installed (run npm ci in bench/node): %w", err)
		}
	}
	r.node, r.nodeChild = node, child
	return nil
}

// riverSQLite is the child program built from the River-on-SQLite module.
var riverSQLite = program("river", "sqlite")

// build builds programs into r.tmp: one go build for those of this module,
// which must be the current directory, and one in riverDir for River on
// SQLite. Each program links one system and its driver alone, so the
// memory measured in it is that system's.
func (r *runner) build(ctx context.Context, programs []string, riverDir string) error {
	var pkgs []string
	for _, p := range programs {
		if p == riverSQLite {
			if _, err := os.Stat(filepath.Join(riverDir, "go.mod")); err != nil {
				return fmt.Errorf("River-on-SQLite module not found in %s (run from bench/, or pass -riversqlite): %w", riverDir, err)
			}
			r.logf("building the River-on-SQLite program in %s", riverDir)
			if err := goBuild(ctx, riverDir, filepath.Join(r.tmp, p), "."); err != nil {
				return err
			}
			continue
		}
		pkgs = append(pkgs, "./"+childrenDir+"/"+p)
	}
	if len(pkgs) == 0 {
		return nil
	}
	if _, err := os.Stat(childrenDir); err != nil {
		return fmt.Errorf("child programs not found in %s (run from bench/): %w", childrenDir, err)
	}
	r.logf("building %s", strings.Join(pkgs, " "))
	return goBuild(ctx, ".", r.tmp+string(filepath.Separator), pkgs...)
}

// goBuild runs go build in dir, writing to out.
func goBuild(ctx context.Context, dir, out string, pkgs ...string) error {
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-o", out}, pkgs...)...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build %s in %s: %w", strings.Join(pkgs, " "), dir, err)
	}
	return nil
}
