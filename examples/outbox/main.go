// Command outbox shows the transactional outbox with sluice: an order and
// the job that ships it are written in one transaction, and the worker
// records the shipment and acks its job in another, so the queue and the
// business tables never disagree, even when a worker fails halfway.
//
//	go run ./examples/outbox
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// ShipArgs are the arguments of a shipping job.
type ShipArgs struct {
	OrderID int64 `json:"order_id"`
}

// Topic names the job type.
func (ShipArgs) Topic() string { return "ship_order" }

// ShipWorker records a shipment and acks its job in one transaction.
type ShipWorker struct {
	sluice.WorkerDefaults[ShipArgs]
	db     *sql.DB
	client *sluice.Client[*sql.Tx]
	// crashes counts simulated failures between the business write and the
	// commit.
	crashes atomic.Int32
}

// RetryPolicy retries quickly, to keep the demo short.
func (w *ShipWorker) RetryPolicy() sluice.RetryPolicy {
	return sluice.SquareRetryPolicy{Unit: 100 * time.Millisecond}
}

// Work ships one order.
func (w *ShipWorker) Work(ctx context.Context, job *sluice.Job[ShipArgs]) error {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO shipments (order_id, job_id) VALUES (?, ?)`,
		job.Args.OrderID, job.ID); err != nil {
		return err
	}
	// Every third order fails on its first attempt after the business
	// write: the rollback discards the shipment, and the job is retried.
	if job.Args.OrderID%3 == 0 && job.Attempt == 1 {
		w.crashes.Add(1)
		return errors.New("carrier API timed out")
	}
	if err := w.client.Ack(ctx, tx, job); err != nil {
		return err // ErrLeaseLost: someone else owns the job now; roll back
	}
	return tx.Commit()
}

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sluice-outbox-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db, err := sqlitedriver.Open(filepath.Join(dir, "shop.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL);
		CREATE TABLE shipments (order_id INTEGER NOT NULL UNIQUE, job_id TEXT NOT NULL)`); err != nil {
		return err
	}

	worker := &ShipWorker{db: db}
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, worker)
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Workers: workers})
	if err != nil {
		return err
	}
	worker.client = client
	if err := client.Start(ctx); err != nil {
		return err
	}

	const orders = 12
	for i := 1; i <= orders; i++ {
		if err := placeOrder(ctx, db, client, fmt.Sprintf("item-%d", i), i == orders); err != nil {
			return err
		}
	}
	if err := waitShipped(ctx, db, orders-1); err != nil {
		return err
	}
	stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		return err
	}
	return report(ctx, db, int(worker.crashes.Load()))
}

// placeOrder writes an order and enqueues its shipping job in one
// transaction; abandon rolls it back, as a failed request would.
func placeOrder(ctx context.Context, db *sql.DB, client *sluice.Client[*sql.Tx], item string, abandon bool) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO orders (item) VALUES (?)`, item)
	if err != nil {
		return err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return err
	}
	if _, err := client.EnqueueTx(ctx, tx, ShipArgs{OrderID: id}, nil); err != nil {
		return err
	}
	if abandon {
		return tx.Rollback()
	}
	return tx.Commit()
}

func waitShipped(ctx context.Context, db *sql.DB, want int) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sluice_jobs WHERE status = 'completed'`).Scan(&n); err != nil {
			return err
		}
		if n == want {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("orders were not shipped in time")
}

func report(ctx context.Context, db *sql.DB, crashes int) error {
	var orders, shipments, completed, mismatched int
	err := db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM orders),
		(SELECT count(*) FROM shipments),
		(SELECT count(*) FROM sluice_jobs WHERE status = 'completed'),
		(SELECT count(*) FROM sluice_jobs j LEFT JOIN shipments s ON s.job_id = j.id
		   WHERE (j.status = 'completed') <> (s.job_id IS NOT NULL))`).
		Scan(&orders, &shipments, &completed, &mismatched)
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
