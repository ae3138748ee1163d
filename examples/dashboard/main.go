// Command dashboard serves the sluice dashboard over a SQLite file, with
// demo jobs flowing through it: mail that sometimes fails and retries,
// images resized with progress and logs (one in a while panics), reports
// that take a while, card charges that run out of retries, syncs scheduled
// for later, a periodic clean-up and a stored schedule, in several queues,
// with tags and metadata.
//
//	go run ./examples/dashboard              # http://127.0.0.1:8080/
//	go run ./examples/dashboard -addr :9090 -db demo.db
//
// It stops cleanly on Ctrl-C (SIGINT) or SIGTERM.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/sluiceweb"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to serve the dashboard on")
	dbPath := flag.String("db", "", "SQLite file to keep the jobs in (default: a new file, removed at exit)")
	rate := flag.Duration("every", 700*time.Millisecond, "how often demo jobs are enqueued")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *dbPath, *rate); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, addr, dbPath string, every time.Duration) error {
	if dbPath == "" {
		dir, err := os.MkdirTemp("", "sluice-dashboard-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		dbPath = filepath.Join(dir, "jobs.db")
	}
	db, err := sqlitedriver.Open(dbPath)
	if err != nil {
		return err
	}
	defer db.Close()

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{
		Workers: demoWorkers(),
		Queues: map[string]sluice.QueueConfig{
			sluice.QueueDefault: {MaxWorkers: 4}, "mail": {MaxWorkers: 4}, "media": {MaxWorkers: 3}, "reports": {MaxWorkers: 2},
		},
		// Retries after 5 s, 20 s, 45 s, so the demo shows them soon.
		RetryPolicy:  sluice.SquareRetryPolicy{Unit: 5 * time.Second},
		PeriodicJobs: []sluice.PeriodicJob{{Cron: "@every 30s", Args: CleanupArgs{}, RunOnStart: true}},
		Logger:       logger,
	})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	if _, err := client.CreateSchedule(ctx, &sluice.Schedule{Name: "nightly-report", Cron: "0 2 * * *",
		TimeZone: "Europe/Paris", Topic: "build_report", Queue: "reports", Payload: []byte(`{"name":"nightly","pages":12}`)}); err != nil &&
		!errors.Is(err, sluice.ErrDuplicateSchedule) {
		return err
	}

	h, err := sluiceweb.New(client, &sluiceweb.Options{Authorize: sluiceweb.AllowAll, Logger: logger})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	srv.RegisterOnShutdown(h.Close)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Printf("sluice dashboard: http://%s/ (Ctrl-C stops)\n", ln.Addr())

	produced := make(chan struct{})
	go func() {
		defer close(produced)
		produce(ctx, client, every)
	}()

	select {
	case <-ctx.Done():
	case err = <-served:
	}
	// Running jobs get a few seconds to finish; past that, Stop hands them
	// back as pending, to run again at the next start.
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	<-produced
	if serr := srv.Shutdown(shutdown); err == nil || errors.Is(err, http.ErrServerClosed) {
		err = serr
	}
	if serr := client.Stop(shutdown); err == nil && !errors.Is(serr, context.DeadlineExceeded) {
		err = serr
	}
	if err == nil {
		fmt.Println("stopped")
	}
	return err
}

// produce enqueues a mix of demo jobs until ctx ends.
func produce(ctx context.Context, client *sluice.Client[*sql.Tx], every time.Duration) {
	tenants := []string{"acme", "globex", "initech", "umbrella"}
	t := time.NewTicker(every)
	defer t.Stop()
	for n := 0; ; n++ {
		tenant := tenants[n%len(tenants)]
		opts := &sluice.EnqueueOptions{Tags: []string{"tenant:" + tenant}, Metadata: map[string]any{"requested_by": "demo", "tenant": tenant}}
		var args sluice.JobArgs
		switch r := rand.IntN(20); {
		case r < 8:
			args, opts.Queue = MailArgs{To: fmt.Sprintf("user%d@%s.example", n, tenant)}, "mail"
		case r < 11:
			args, opts.Queue = ResizeArgs{Image: fmt.Sprintf("photos/%s/%04d.jpg", tenant, n), Width: 1200}, "media"
			opts.Tags = append(opts.Tags, "media")
		case r < 12:
			args, opts.Queue = ReportArgs{Name: tenant + "-weekly", Pages: 6 + rand.IntN(8)}, "reports"
		case r < 17:
			args = ChargeArgs{Customer: fmt.Sprintf("cus_%s_%d", tenant, n%97), Cents: 500 + rand.IntN(20000)}
			opts.MaxRetries, opts.Tags = 2, append(opts.Tags, "billing")
		default:
			args = SyncArgs{Account: tenant}
			opts.RunAt = time.Now().Add(time.Duration(1+rand.IntN(30)) * time.Minute)
			opts.UniqueKey = "sync-" + tenant
		}
		if _, err := client.Enqueue(ctx, args, opts); err != nil && ctx.Err() == nil {
			log.Printf("enqueue: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
