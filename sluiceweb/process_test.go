package sluiceweb_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// The environment of a helper process: the test binary run again to act
// on the test's database from another process.
const (
	helperEnv    = "SLUICEWEB_TEST_HELPER" // set: run as a helper
	helperDriver = "SLUICEWEB_TEST_DRIVER" // sqlite or postgres
	helperDSN    = "SLUICEWEB_TEST_DSN"    // the SQLite file or Postgres URL
	helperSchema = "SLUICEWEB_TEST_SCHEMA" // the Postgres schema
)

// helperMain is the helper process: over the database its environment
// names, it works one mail job to completion (reporting progress half
// way, and logging a record then, and another a moment later), and
// enqueues another for later, cancels it, requeues it (so it is
// worked too) and deletes it. It prints each job's ID as it enqueues it:
// "worked <id>", "requeued <id>".
func helperMain() int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	switch os.Getenv(helperDriver) {
	case "sqlite":
		db, openErr := sqlitedriver.Open(os.Getenv(helperDSN))
		if openErr != nil {
			err = openErr
			break
		}
		defer db.Close()
		err = helperWork(ctx, sqlitedriver.New(db))
	case "postgres":
		pool, openErr := pgxpool.New(ctx, os.Getenv(helperDSN))
		if openErr != nil {
			err = openErr
			break
		}
		defer pool.Close()
		err = helperWork(ctx, pgxdriver.New(pool, pgxdriver.WithSchema(os.Getenv(helperSchema))))
	default:
		err = fmt.Errorf("unknown driver %q", os.Getenv(helperDriver))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	return 0
}

func helperWork[TTx any](ctx context.Context, d driver.Driver[TTx]) error {
	c, err := sluice.NewClient(d, &sluice.Config{
		Workers: mailWorkers(func(ctx context.Context, job *sluice.Job[mailArgs]) error {
			if err := sluice.ReportProgress(ctx, 50, "half way"); err != nil {
				return err
			}
			sluice.Logger(ctx).Info("half way")
			time.Sleep(250 * time.Millisecond)
			sluice.Logger(ctx).Info("almost there")
			time.Sleep(250 * time.Millisecond)
			return nil
		}),
		ProgressInterval: 10 * time.Millisecond,
		PollInterval:     20 * time.Millisecond,
		SkipMigrations:   true,
		Logger:           quiet,
	})
	if err != nil {
		return err
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	defer c.Stop(context.WithoutCancel(ctx))
	worked, err := c.Enqueue(ctx, mailArgs{To: "worked@example.com"}, nil)
	if err != nil {
		return err
	}
	fmt.Println("worked", worked.Job.ID)
	later, err := c.Enqueue(ctx, mailArgs{To: "later@example.com"}, &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)})
	if err != nil {
		return err
	}
	fmt.Println("requeued", later.Job.ID)
	// Each step waits for the feed of the test's process to see the one
	// before.
	time.Sleep(500 * time.Millisecond)
	if _, err := c.Cancel(ctx, later.Job.ID); err != nil {
		return err
	}
	time.Sleep(500 * time.Millisecond)
	if _, err := c.Requeue(ctx, later.Job.ID); err != nil {
		return err
	}
	for _, id := range []string{worked.Job.ID, later.Job.ID} {
		if err := waitCompleted(ctx, c, id); err != nil {
			return err
		}
	}
	time.Sleep(500 * time.Millisecond)
	_, err = c.Delete(ctx, later.Job.ID)
	return err
}

// waitCompleted waits for job id to complete.
func waitCompleted[TTx any](ctx context.Context, c *sluice.Client[TTx], id string) error {
	for {
		job, err := c.Get(ctx, id)
		if err != nil {
			return err
		}
		if job.Status == sluice.StatusCompleted {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startHelper runs the helper process on db and returns the IDs it
// printed, by what it did to them.
func startHelper(t *testing.T, db *database) map[string]string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=1"}, db.env...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	ids := map[string]string{}
	lines := bufio.NewScanner(out)
	for len(ids) < 2 && lines.Scan() {
		what, id, _ := strings.Cut(lines.Text(), " ")
		ids[what] = id
	}
	require.Len(t, ids, 2, "the helper's output")
	t.Cleanup(func() {
		// The helper ends once its job is completed; one that hangs is
		// killed.
		timer := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
		defer timer.Stop()
		require.NoError(t, cmd.Wait(), "the helper process")
	})
	return ids
}

// TestEventsShowWhatAnotherProcessDoes runs a second process on the same
// SQLite file, and on the same Postgres schema, and requires an event
// stream of the handler in this process to show what it did.
func TestEventsShowWhatAnotherProcessDoes(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		stream := e.events("api/events", "")
		ids := startHelper(t, db)
		worked, requeued := ids["worked"], ids["requeued"]

		var progressed, logged, completed bool
		var seen []string // what happened to the requeued job
		for !(progressed && logged && completed && slices.Contains(seen, "deleted")) {
			ev := stream.next()
			if ev.name != "job" {
				continue
			}
			ch := ev.change(t)
			switch {
			case ch.Job.ID == worked && ch.Kind == "logged":
				// A record stored without a change of progress: the
				// second, or the first if stored apart from it.
				require.Positive(t, ch.Job.Logged)
				require.Equal(t, 50.0, ch.Job.Progress.Percent)
				logged = logged || ch.Job.Logged == 2
			case ch.Job.ID == worked && ch.Job.Status == "processing" && ch.Job.Progress != nil:
				require.Equal(t, 50.0, ch.Job.Progress.Percent)
				progressed = true
			case ch.Job.ID == worked && ch.Kind == "completed":
				require.True(t, progressed, "completed before progress was seen")
				require.True(t, logged, "completed before the logs were seen")
				require.Equal(t, 2, ch.Job.Logged)
				completed = true
			case ch.Job.ID == requeued:
				seen = append(seen, ch.Kind)
			}
		}
		// The job is seen enqueued, cancelled, pending, running or done
		// again (the feed reports the state it reads, once per interval),
		// and deleted: the last two only another process's log of
		// actions tells.
		require.Equal(t, []string{"enqueued", "cancelled"}, seen[:2])
		require.Contains(t, []string{"requeued", "started", "completed"}, seen[2])
		require.Equal(t, "deleted", seen[len(seen)-1])
	})
}
