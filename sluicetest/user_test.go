package sluicetest_test

// This file reads as an application's own tests would: a sign-up that
// enqueues a welcome mail in its transaction, and the mail's worker.

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/sluicetest"
)

// WelcomeArgs are the application's job arguments.
type WelcomeArgs struct {
	UserID int64  `json:"user_id"`
	Email  string `json:"email"`
}

func (WelcomeArgs) Topic() string { return "welcome_mail" }

// app is the application under test: its database and its client.
type app struct {
	db     *sql.DB
	client *sluice.Client[*sql.Tx]
	// now is the application's clock, which its client shares.
	now func() time.Time
	// outbox is what its mailer sent.
	outbox []string
}

// signUp creates a user and enqueues the welcome mail, in one transaction.
func (a *app) signUp(ctx context.Context, email string) (int64, error) {
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	res, err := tx.ExecContext(ctx, `INSERT INTO users (email) VALUES (?)`, email)
	if err != nil {
		return 0, err
	}
	id, _ := res.LastInsertId()
	if _, err := a.client.EnqueueTx(ctx, tx, WelcomeArgs{UserID: id, Email: email},
		&sluice.EnqueueOptions{RunAt: a.now().Add(10 * time.Minute), Tags: []string{"onboarding"}}); err != nil {
		return 0, err
	}
	return id, tx.Commit()
}

// sendWelcome is the application's worker.
func (a *app) sendWelcome(_ context.Context, job *sluice.Job[WelcomeArgs]) error {
	if job.Args.Email == "" {
		return sluice.Cancel(errors.New("no address"))
	}
	a.outbox = append(a.outbox, job.Args.Email)
	return nil
}

// newApp builds the application over an in-memory database, with a clock
// the test moves.
func newApp(t *testing.T, clock *sluicetest.Clock) *app {
	db := sluicetest.OpenMemory(t)
	_, err := db.Exec(`CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL)`)
	require.NoError(t, err)
	a := &app{db: db, now: clock.Now}
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(a.sendWelcome))
	a.client, err = sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Workers: workers, Clock: clock.Now})
	require.NoError(t, err)
	return a
}

func TestSignUpEnqueuesWelcomeMail(t *testing.T) {
	t.Parallel()
	clock := sluicetest.NewClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	a := newApp(t, clock)

	id, err := a.signUp(t.Context(), "ada@example.com")
	require.NoError(t, err)

	job := sluicetest.RequireEnqueued[WelcomeArgs](t, a.client, &sluicetest.RequireOpts{
		RunAt: clock.Now().Add(10 * time.Minute),
		Tags:  []string{"onboarding"},
	})
	require.Equal(t, WelcomeArgs{UserID: id, Email: "ada@example.com"}, job.Args)

	// Ten minutes later the mail goes out.
	clock.Advance(10 * time.Minute)
	row, err := a.client.WorkNext(t.Context(), sluice.QueueDefault)
	require.NoError(t, err)
	require.Equal(t, sluice.StatusCompleted, row.Status)
	require.Equal(t, []string{"ada@example.com"}, a.outbox)
}

func TestFailedSignUpEnqueuesNothing(t *testing.T) {
	t.Parallel()
	a := newApp(t, sluicetest.NewClock(time.Time{}))
	_, err := a.db.Exec(`CREATE UNIQUE INDEX users_email ON users (email)`)
	require.NoError(t, err)
	_, err = a.signUp(t.Context(), "ada@example.com")
	require.NoError(t, err)

	_, err = a.signUp(t.Context(), "ada@example.com")
	require.Error(t, err, "the address is taken")

	// Only the first sign-up's mail: the second rolled back with its user.
	sluicetest.RequireManyEnqueued(t, a.client, []sluicetest.ExpectedJob{{Args: WelcomeArgs{}}})
}

func TestWelcomeMailWithoutAddressIsCancelled(t *testing.T) {
	t.Parallel()
	a := newApp(t, sluicetest.NewClock(time.Time{}))
	row := sluicetest.Work(t, a.client, WelcomeArgs{UserID: 1}, nil)
	require.Equal(t, sluice.StatusCancelled, row.Status)
	require.Empty(t, a.outbox)
	sluicetest.RequireNotEnqueued[WelcomeArgs](t, a.client, &sluicetest.RequireOpts{Status: sluice.StatusPending})
}
