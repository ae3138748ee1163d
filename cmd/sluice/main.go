// Command sluice inspects and manages the jobs of a sluice database from a
// shell: it migrates the schema, lists, explains and acts on jobs, enqueues
// them, pauses, resumes and limits queues, topics and keys, shows, cancels
// and retries workflows and batches, and serves the dashboard.
//
//	go install ./cmd/sluice                                  # from a clone
//	go install github.com/sluicehq/sluice/cmd/sluice@latest  # once published
//	sluice --database-url postgres://localhost/app list --status failed
//
// The database comes from --database-url, or else the environment variable
// SLUICE_DATABASE_URL, or else DATABASE_URL. A postgres:// or postgresql://
// URL opens Postgres; a file path, or a sqlite: URL, opens a SQLite file.
// --table and --schema name the jobs table and its Postgres schema.
//
// The command never works jobs: the client it opens has no workers.
//
// Exit codes: 0 success; 1 failure (the database could not be reached, an
// action was refused); 2 bad usage (an unknown verb or flag, a malformed
// URL, job ID, filter or payload); 3 a job, workflow or batch that was
// asked for by ID does not exist. See docs/cli.md for every verb.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicehq/sluice"
)

// The command's exit codes.
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitNotFound = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	c := &cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, tty: isTerminal(os.Stdout)}
	code := c.run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// cli is one run of the command: its streams, its environment, and the
// flags every verb shares.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// tty is true when stdout is a terminal: only then are progress lines
	// written (to stderr).
	tty bool

	db   dbFlags
	json bool
	// verb is the verb being run, named by the hint after a usage error.
	verb string
}

// command is one verb (or group of verbs) of the command line.
type command struct {
	name    string
	args    string
	summary string
	run     func(ctx context.Context, c *cli, args []string) error
}

// commands returns the verbs, in the order the help lists them. Each group
// of verbs lives in a file of its own (migrate.go, jobs.go, act.go,
// enqueue.go, queue.go, limits.go, groups.go, ui.go) and adds its entries
// here.
func commands() []command {
	var cmds []command
	cmds = append(cmds, migrateCommands()...)
	cmds = append(cmds, jobCommands()...)
	cmds = append(cmds, actCommands()...)
	cmds = append(cmds, enqueueCommands()...)
	cmds = append(cmds, queueCommands()...)
	cmds = append(cmds, topicCommands()...)
	cmds = append(cmds, groupCommands()...)
	cmds = append(cmds, uiCommands()...)
	return cmds
}

// run runs the command line args and returns the exit code.
func (c *cli) run(ctx context.Context, args []string) int {
	global := flag.NewFlagSet("sluice", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	c.sharedFlags(global)
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.usage(c.stdout)
			return exitOK
		}
		return c.fail(usageErrorf("%v", err))
	}
	args = global.Args()
	if len(args) == 0 {
		c.usage(c.stderr)
		return exitUsage
	}
	if args[0] == "help" {
		c.usage(c.stdout)
		return exitOK
	}
	for _, cmd := range commands() {
		if cmd.name == args[0] {
			c.verb = cmd.name
			return c.fail(cmd.run(ctx, c, args[1:]))
		}
	}
	return c.fail(usageErrorf("unknown verb %q", args[0]))
}

// usage writes the list of verbs to w.
func (c *cli) usage(w io.Writer) {
	fmt.Fprint(w, `sluice inspects and manages the jobs of a sluice database.

Usage: sluice [--database-url URL] <verb> [flags] [arguments]

Verbs:
`)
	for _, cmd := range commands() {
		fmt.Fprintf(w, "  %-34s %s\n", cmd.name+" "+cmd.args, cmd.summary)
	}
	fmt.Fprint(w, `
Flags every verb takes:
  --database-url URL   postgres://… or a SQLite file path or sqlite:PATH
                       (default $SLUICE_DATABASE_URL, then $DATABASE_URL)
  --table NAME         the jobs table (default sluice_jobs)
  --schema NAME        the Postgres schema of the table
  --json               print JSON instead of tables

Run "sluice <verb> --help" for a verb's flags.
Exit codes: 0 ok, 1 failure, 2 bad usage, 3 job, workflow or batch not found.
`)
}

// fail reports err, if any, and returns its exit code. Bad usage is
// reported with one more line, pointing to the help.
func (c *cli) fail(err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	var qe *quietError
	if !errors.As(err, &qe) {
		fmt.Fprintln(c.stderr, "sluice:", err)
	}
	code := exitCode(err)
	if code == exitUsage {
		help := "sluice --help"
		if c.verb != "" {
			help = "sluice " + c.verb + " --help"
		}
		fmt.Fprintf(c.stderr, "Run %q for usage.\n", help)
	}
	return code
}

// exitCode returns the exit code err calls for.
func exitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue), errors.Is(err, sluice.ErrInvalidFilter), errors.Is(err, sluice.ErrInvalidArgs),
		errors.Is(err, sluice.ErrInvalidOptions), errors.Is(err, sluice.ErrPayloadTooLarge),
		errors.Is(err, sluice.ErrEmptyTopic), errors.Is(err, sluice.ErrInvalidConfig):
		return exitUsage
	case errors.Is(err, sluice.ErrNotFound):
		return exitNotFound
	}
	return exitFailure
}

// usageError is bad usage of the command: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// isTerminal reports whether f is a terminal (a character device).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
