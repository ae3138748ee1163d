// Command outbox shows the transactional outbox with sluice: an order and
// the job that ships it are written in one transaction, and the worker
// records the shipment and acks its job in another, so the queue and the
// business tables never disagree, even when a worker fails halfway.
//
// It runs on a SQLite file in a temporary directory, or on Postgres when
// given a URL, in a fresh schema that it drops when done:
//
//	go run ./examples/outbox
//	go run ./examples/outbox -database-url postgres://postgres@127.0.0.1:5432/test
//	DATABASE_URL=postgres://... go run ./examples/outbox
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
)

// ShipArgs are the arguments of a shipping job.
type ShipArgs struct {
	OrderID int64 `json:"order_id"`
}

// Topic names the job type.
func (ShipArgs) Topic() string { return "ship_order" }

// store is what the example needs of a database, whatever its transaction
// type: the SQLite and Postgres versions differ only here.
type store[TTx any] struct {
	begin    func(ctx context.Context) (TTx, error)
	commit   func(ctx context.Context, tx TTx) error
	rollback func(ctx context.Context, tx TTx) error
	// exec runs a statement in tx; insertID runs one returning an id.
	exec     func(ctx context.Context, tx TTx, query string, args ...any) error
	insertID func(ctx context.Context, tx TTx, query string, args ...any) (int64, error)
	// counts runs a query returning integers, outside any transaction.
	counts func(ctx context.Context, query string, dest ...*int) error
}

// ShipWorker records a shipment and acks its job in one transaction.
type ShipWorker[TTx any] struct {
	sluice.WorkerDefaults[ShipArgs]
	store *store[TTx]
	// crashes counts simulated failures between the business write and the
	// commit.
	crashes atomic.Int32
}

// RetryPolicy retries quickly, to keep the demo short.
func (w *ShipWorker[TTx]) RetryPolicy() sluice.RetryPolicy {
	return sluice.SquareRetryPolicy{Unit: 100 * time.Millisecond}
}

// Work ships one order.
func (w *ShipWorker[TTx]) Work(ctx context.Context, job *sluice.Job[ShipArgs]) error {
	tx, err := w.store.begin(ctx)
	if err != nil {
		return err
	}
	defer w.store.rollback(ctx, tx)
	if err := w.store.exec(ctx, tx, `INSERT INTO shipments (order_id, job_id) VALUES ($1, $2)`,
		job.Args.OrderID, job.ID); err != nil {
		return err
	}
	// Every third order fails on its first attempt after the business
	// write: the rollback discards the shipment, and the job is retried.
	if job.Args.OrderID%3 == 0 && job.Attempt == 1 {
		w.crashes.Add(1)
		return errors.New("carrier API timed out")
	}
	client := sluice.ClientFromContext[TTx](ctx)
	if err := client.Ack(ctx, tx, job); err != nil {
		return err // ErrLeaseLost: someone else owns the job now; roll back
	}
	return w.store.commit(ctx, tx)
}

func main() {
	url := flag.String("database-url", os.Getenv("DATABASE_URL"),
		"Postgres URL; empty runs on a SQLite file (default $DATABASE_URL)")
	flag.Parse()
	var err error
	if *url == "" {
		err = runSQLite(context.Background())
	} else {
		err = runPostgres(context.Background(), *url)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// run places orders, lets the worker ship them, and checks that the queue
// and the business tables agree.
func run[TTx any](ctx context.Context, st *store[TTx], client *sluice.Client[TTx], worker *ShipWorker[TTx]) error {
	if err := client.Start(ctx); err != nil {
		return err
	}
	const orders = 12
	for i := 1; i <= orders; i++ {
		if err := placeOrder(ctx, st, client, fmt.Sprintf("item-%d", i), i == orders); err != nil {
			return err
		}
	}
	if err := waitShipped(ctx, st, orders-1); err != nil {
		return err
	}
	stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		return err
	}
	return report(ctx, st, int(worker.crashes.Load()))
}

// placeOrder writes an order and enqueues its shipping job in one
// transaction; abandon rolls it back, as a failed request would.
func placeOrder[TTx any](ctx context.Context, st *store[TTx], client *sluice.Client[TTx], item string, abandon bool) error {
	tx, err := st.begin(ctx)
	if err != nil {
		return err
	}
	defer st.rollback(ctx, tx)
	id, err := st.insertID(ctx, tx, `INSERT INTO orders (item) VALUES ($1) RETURNING id`, item)
	if err != nil {
		return err
	}
	if _, err := client.EnqueueTx(ctx, tx, ShipArgs{OrderID: id}, nil); err != nil {
		return err
	}
	if abandon {
		return st.rollback(ctx, tx)
	}
	return st.commit(ctx, tx)
}

func waitShipped[TTx any](ctx context.Context, st *store[TTx], want int) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		if err := st.counts(ctx, `SELECT count(*) FROM sluice_jobs WHERE status = 'completed'`, &n); err != nil {
			return err
		}
		if n == want {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("orders were not shipped in time")
}

func report[TTx any](ctx context.Context, st *store[TTx], crashes int) error {
	var orders, shipments, completed, mismatched int
	err := st.counts(ctx, `SELECT
		(SELECT count(*) FROM orders),
		(SELECT count(*) FROM shipments),
		(SELECT count(*) FROM sluice_jobs WHERE status = 'completed'),
		(SELECT count(*) FROM sluice_jobs j LEFT JOIN shipments s ON s.job_id = CAST(j.id AS TEXT)
		   WHERE (j.status = 'completed') <> (s.job_id IS NOT NULL))`,
		&orders, &shipments, &completed, &mismatched)
	if err != nil {
		return err
	}
	fmt.Printf("orders placed:     %d (one more was rolled back with its job)\n", orders)
	fmt.Printf("worker failures:   %d (each rolled back its shipment and was retried)\n", crashes)
	fmt.Printf("shipments:         %d\n", shipments)
	fmt.Printf("jobs completed:    %d\n", completed)
	fmt.Printf("jobs disagreeing with shipments: %d\n", mismatched)
	if orders != shipments || shipments != completed || mismatched != 0 {
		return errors.New("queue and business tables disagree")
	}
	return nil
}
