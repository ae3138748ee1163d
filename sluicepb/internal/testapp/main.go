// Command testapp serves a PocketBase app with sluice jobs for the tests of
// the JavaScript SDK (../../js): a fresh data directory, a superuser and a
// user, the HTTP API on an ephemeral port of the loopback interface. It
// prints one JSON line, {"url", "superuserToken", "userToken"}, serves
// until its standard input closes or it gets SIGINT or SIGTERM, then
// terminates the app as PocketBase does and removes the data directory.
//
// Users may enqueue (EnqueueRule `@request.auth.id != ""`); reading and
// managing jobs is for superusers. Topic "echo" logs "echoing" and
// completes with its payload as result; topic "flaky" fails every attempt
// with "flaky fails".
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	_ "github.com/pocketbase/pocketbase/migrations" // the system collections and users

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicepb"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

// quickRetry retries a failed job after a millisecond.
type quickRetry struct{}

func (quickRetry) NextRetry(_ *sluice.JobRow, failedAt time.Time) time.Time {
	return failedAt.Add(time.Millisecond)
}

func run() error {
	dir, err := os.MkdirTemp("", "sluicepb-testapp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	app := core.NewBaseApp(core.BaseAppConfig{DataDir: dir})
	jobs, err := sluicepb.Register(app, &sluicepb.Config{
		EnqueueRule: `@request.auth.id != ""`,
		Sluice:      &sluice.Config{RetryPolicy: quickRetry{}},
	})
	if err != nil {
		return err
	}
	err = errors.Join(
		sluicepb.AddRawWorker(jobs, "echo", sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[sluice.RawArgs]) error {
			sluice.Logger(ctx).Info("echoing", "bytes", len(job.Args.Payload))
			return sluice.SetResult(ctx, job.Args.Payload)
		})),
		sluicepb.AddRawWorker(jobs, "flaky", sluice.WorkFunc(func(context.Context, *sluice.Job[sluice.RawArgs]) error {
			return errors.New("flaky fails")
		})),
	)
	if err != nil {
		return err
	}
	if err := app.Bootstrap(); err != nil {
		return err
	}
	if err := app.RunAllMigrations(); err != nil {
		return err
	}
	superuser, err := authToken(app, core.CollectionNameSuperusers, "root@example.com")
	if err != nil {
		return err
	}
	user, err := authToken(app, "users", "ada@example.com")
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	app.OnServe().BindFunc(func(e *core.ServeEvent) error {
		e.Listener = ln
		e.InstallerFunc = nil
		return e.Next()
	})
	served := make(chan error, 1)
	go func() { served <- apis.Serve(app, apis.ServeConfig{HttpAddr: ln.Addr().String()}) }()
	url := "http://" + ln.Addr().String()
	if err := waitHealthy(url, served); err != nil {
		return err
	}
	line, err := json.Marshal(map[string]string{"url": url, "superuserToken": superuser, "userToken": user})
	if err != nil {
		return err
	}
	fmt.Println(string(line))

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	stdin := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stdin)
	}()
	select {
	case <-stdin:
	case <-stop:
	case err := <-served:
		return fmt.Errorf("the server stopped: %w", err)
	}
	err = app.OnTerminate().Trigger(&core.TerminateEvent{App: app}, func(e *core.TerminateEvent) error {
		return e.App.ResetBootstrapState()
	})
	return errors.Join(err, <-served)
}

// authToken creates an auth record in collection and returns its token.
func authToken(app core.App, collection, email string) (string, error) {
	coll, err := app.FindCollectionByNameOrId(collection)
	if err != nil {
		return "", err
	}
	rec := core.NewRecord(coll)
	rec.SetEmail(email)
	rec.SetPassword("1234567890")
	if err := app.Save(rec); err != nil {
		return "", err
	}
	return rec.NewAuthToken()
}

// waitHealthy waits until the app at url answers its health check.
func waitHealthy(url string, served <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-served:
			return fmt.Errorf("the server stopped: %w", err)
		default:
		}
		if res, err := http.Get(url + "/api/health"); err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errors.New("the app did not answer its health check within 30s")
}
