package sluicepb_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/sluicepb"
)

// workerEnv, set to a data directory, makes the test binary a PocketBase
// app that works fault jobs there until it is killed or terminated.
const workerEnv = "SLUICEPB_TEST_WORKER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(workerEnv); dir != "" {
		if err := runWorkerApp(dir); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// killLease is the lock duration of the killed app's jobs: how soon the
// restarted app takes them back.
const killLease = time.Second

// runWorkerApp serves a PocketBase app on dir whose worker writes one
// effects record per job and acks the job in the same transaction. It
// prints "ready" once serving and stops gracefully on SIGTERM.
func runWorkerApp(dir string) error {
	app := core.NewBaseApp(core.BaseAppConfig{DataDir: dir})
	jobs, err := sluicepb.Register(app, &sluicepb.Config{Workers: 4, LockDuration: killLease, PollInterval: 50 * time.Millisecond})
	if err != nil {
		return err
	}
	err = sluicepb.AddWorker(jobs, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[ChargeArgs]) error {
		time.Sleep(time.Duration(job.Args.Amount) * time.Millisecond) // the work
		return app.RunInTransaction(func(txApp core.App) error {
			effects, err := txApp.FindCollectionByNameOrId("effects")
			if err != nil {
				return err
			}
			rec := core.NewRecord(effects)
			rec.Set("job", job.ID)
			if err := txApp.Save(rec); err != nil {
				return err
			}
			return jobs.Ack(ctx, txApp, job)
		})
	}))
	if err != nil {
		return err
	}
	if err := app.Bootstrap(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	app.OnServe().BindFunc(func(e *core.ServeEvent) error {
		e.Listener = ln
		e.InstallerFunc = nil
		if err := e.Next(); err != nil {
			return err
		}
		fmt.Println("ready")
		return nil
	})
	go func() {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		<-ctx.Done()
		_ = app.OnTerminate().Trigger(&core.TerminateEvent{App: app}, func(e *core.TerminateEvent) error {
			return e.App.ResetBootstrapState()
		})
	}()
	return apis.Serve(app, apis.ServeConfig{HttpAddr: ln.Addr().String()})
}

// workerProc is a running worker app.
type workerProc struct {
	cmd *exec.Cmd
}

// startWorker starts the test binary as a worker app on dir and waits
// until it serves.
func startWorker(t *testing.T, dir string) *workerProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == "ready" {
				ready <- true
			}
		}
		close(ready)
	}()
	select {
	case ok := <-ready:
		require.True(t, ok, "the worker app exited before serving")
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the worker app did not start")
	}
	return &workerProc{cmd: cmd}
}

// TestKillMidWork kills the PocketBase app with SIGKILL while it works, a
// few times, restarts it each time, and checks from data.db afterwards
// that every job completed exactly once: one effect per job (the effect
// and the ack commit together), no job lost or left stuck.
func TestKillMidWork(t *testing.T) {
	t.Parallel()
	const n = 300
	dir := t.TempDir()

	// Set up: the effects collection and the jobs, enqueued before any
	// worker runs.
	setup := core.NewBaseApp(core.BaseAppConfig{DataDir: dir})
	jobs, err := sluicepb.Register(setup, nil)
	require.NoError(t, err)
	require.NoError(t, setup.Bootstrap())
	require.NoError(t, setup.RunAllMigrations())
	effects := core.NewBaseCollection("effects")
	effects.Fields.Add(&core.TextField{Name: "job"})
	require.NoError(t, setup.Save(effects))
	params := make([]sluice.EnqueueParams, n)
	for i := range params {
		params[i] = sluice.EnqueueParams{Args: ChargeArgs{Order: fmt.Sprint(i), Amount: 2 + i%7}}
	}
	require.NoError(t, setup.RunInTransaction(func(txApp core.App) error {
		_, err := jobs.EnqueueManyTx(t.Context(), txApp, params)
		return err
	}))
	require.NoError(t, setup.ResetBootstrapState())

	db, err := sql.Open("sqlite", sqlitedriver.DSN(filepath.Join(dir, "data.db")))
	require.NoError(t, err)
	defer db.Close()
	count := func(query string) int {
		var c int
		require.NoError(t, db.QueryRowContext(t.Context(), query).Scan(&c))
		return c
	}
	effectsDone := func() int { return count(`SELECT count(*) FROM effects`) }

	w := startWorker(t, dir)
	kills := 0
	for kills < 3 {
		// Kill once the app is busy: some effects since the last start.
		before := effectsDone()
		require.Eventually(t, func() bool { return effectsDone() > before+10 || effectsDone() == n },
			60*time.Second, 5*time.Millisecond)
		if effectsDone() == n {
			break
		}
		require.NoError(t, w.cmd.Process.Signal(syscall.SIGKILL))
		_ = w.cmd.Wait()
		kills++
		w = startWorker(t, dir)
	}
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM _jobs WHERE status = 'completed'`) == n
	}, 120*time.Second, 20*time.Millisecond, "every job completes after the kills")
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, w.cmd.Wait(), "the app stops cleanly on SIGTERM")

	require.Equal(t, n, count(`SELECT count(*) FROM _jobs`), "no job lost")
	require.Equal(t, n, count(`SELECT count(DISTINCT job) FROM effects`), "every job took effect")
	require.Equal(t, n, effectsDone(), "no job took effect twice")
	require.Zero(t, count(`SELECT count(*) FROM effects WHERE job NOT IN (SELECT id FROM _jobs)`))
	// The kills came mid-work: jobs claimed by a killed app were taken back
	// and run again.
	rerun := count(`SELECT count(*) FROM _jobs WHERE attempt > 1`)
	require.Positive(t, rerun, "no job was running when the app was killed")
	t.Logf("FAULT scenario=pocketbase_kill9 driver=sqlite jobs=%d kills=%d rerun=%d lost=0 duplicate_effects=0 stuck=0", n, kills, rerun)
}
