package sluice_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// ExportArgs are an export for one customer.
type ExportArgs struct {
	Customer string `json:"customer"`
}

func (ExportArgs) Topic() string { return "export" }

// JobKey makes the customer the export's key: enqueues need not repeat it.
func (a ExportArgs) JobKey() string { return a.Customer }

// At most two exports per customer at once, across every client, however
// many workers the clients have and however many exports a customer asks
// for: a customer with a backlog does not take every worker.
func ExampleClient_SetKeyLimits() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	var mu sync.Mutex
	running, most, done := map[string]int{}, map[string]int{}, 0
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[ExportArgs]) error {
		mu.Lock()
		running[job.Key]++
		most[job.Key] = max(most[job.Key], running[job.Key])
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // the export
		mu.Lock()
		running[job.Key]--
		done++
		mu.Unlock()
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{
		Workers: workers, Logger: quiet, PollInterval: 10 * time.Millisecond,
		Queues: map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: 10}},
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.SetKeyLimits(ctx, sluice.QueueScope(sluice.QueueDefault), sluice.KeyLimits{MaxRunning: 2}); err != nil {
		log.Fatal(err)
	}
	var params []sluice.EnqueueParams
	for range 8 {
		params = append(params, sluice.EnqueueParams{Args: ExportArgs{Customer: "acme"}})
	}
	params = append(params, sluice.EnqueueParams{Args: ExportArgs{Customer: "globex"}})
	if _, err := client.EnqueueMany(ctx, params); err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	waitUntil(func() bool { mu.Lock(); defer mu.Unlock(); return done == len(params) })
	mu.Lock()
	defer mu.Unlock()
	fmt.Println("most exports of acme at once:", most["acme"])
	fmt.Println("most exports of globex at once:", most["globex"])
	// Output:
	// most exports of acme at once: 2
	// most exports of globex at once: 1
}

// PartnerCallArgs are a call to a partner's API on behalf of an account.
type PartnerCallArgs struct {
	Account string `json:"account"`
}

func (PartnerCallArgs) Topic() string { return "partner_call" }

// At most two calls per account per hour to a partner's API, whichever
// queue the calls are in: a limit on the topic's keys. A job held by its
// key's rate waits, and Explain says so.
func ExampleKeyLimits_rate() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	var mu sync.Mutex
	calls := 0
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[PartnerCallArgs]) error {
		mu.Lock()
		calls++
		mu.Unlock()
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{
		Workers: workers, Logger: quiet, PollInterval: 10 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.SetKeyLimits(ctx, sluice.TopicScope("partner_call"), sluice.KeyLimits{
		RateLimit: 2, RatePeriod: time.Hour,
	}); err != nil {
		log.Fatal(err)
	}
	var last string
	for range 3 {
		res, err := client.Enqueue(ctx, PartnerCallArgs{Account: "acct-7"}, &sluice.EnqueueOptions{Key: "acct-7"})
		if err != nil {
			log.Fatal(err)
		}
		last = res.Job.ID
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	waitUntil(func() bool { mu.Lock(); defer mu.Unlock(); return calls == 2 })
	ex, err := client.Explain(ctx, last)
	if err != nil {
		log.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Println("calls made:", calls)
	fmt.Println("the third waits:", ex.Reason)
	// Output:
	// calls made: 2
	// the third waits: key_rate
}

// LedgerArgs are one entry of an order's ledger.
type LedgerArgs struct {
	Order string `json:"order"`
	Entry int    `json:"entry"`
}

func (LedgerArgs) Topic() string { return "ledger" }

// The entries of one order run one at a time, in the order they were
// enqueued, while the entries of other orders run beside them.
func ExampleEnqueueOptions_sequence() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	var mu sync.Mutex
	var ran []string
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[LedgerArgs]) error {
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		if job.Args.Order == "o-1" {
			ran = append(ran, fmt.Sprint(job.Args.Entry))
		}
		mu.Unlock()
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{
		Workers: workers, Logger: quiet, PollInterval: 10 * time.Millisecond,
		Queues: map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: 8}},
	})
	if err != nil {
		log.Fatal(err)
	}
	for entry := 1; entry <= 5; entry++ {
		for _, order := range []string{"o-1", "o-2"} {
			_, err := client.Enqueue(ctx, LedgerArgs{Order: order, Entry: entry}, &sluice.EnqueueOptions{
				Key:      order,
				Sequence: sluice.SequenceHold, // a failed entry holds the rest until it is requeued
			})
			if err != nil {
				log.Fatal(err)
			}
		}
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	waitUntil(func() bool { mu.Lock(); defer mu.Unlock(); return len(ran) == 5 })
	mu.Lock()
	defer mu.Unlock()
	fmt.Println("entries of o-1, as they ran:", strings.Join(ran, " "))
	// Output:
	// entries of o-1, as they ran: 1 2 3 4 5
}

// ReportArgs are a report for a tenant.
type ReportArgs struct {
	Tenant string `json:"tenant"`
}

func (ReportArgs) Topic() string { return "report" }

// JobKey makes the tenant the report's key.
func (a ReportArgs) JobKey() string { return a.Tenant }

// A tenant with a large backlog does not delay a tenant with a few jobs:
// a fair queue's claims take keys in turn.
func ExampleKeyLimits_fair() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	var mu sync.Mutex
	var order []string
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[ReportArgs]) error {
		mu.Lock()
		order = append(order, job.Key)
		mu.Unlock()
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{
		Workers: workers, Logger: quiet, PollInterval: 10 * time.Millisecond,
		Queues: map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: 1}},
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.SetKeyLimits(ctx, sluice.QueueScope(sluice.QueueDefault), sluice.KeyLimits{Fair: true}); err != nil {
		log.Fatal(err)
	}
	var params []sluice.EnqueueParams
	for range 20 {
		params = append(params, sluice.EnqueueParams{Args: ReportArgs{Tenant: "big"}})
	}
	params = append(params, sluice.EnqueueParams{Args: ReportArgs{Tenant: "small"}},
		sluice.EnqueueParams{Args: ReportArgs{Tenant: "small"}})
	if _, err := client.EnqueueMany(ctx, params); err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	waitUntil(func() bool { mu.Lock(); defer mu.Unlock(); return len(order) >= 5 })
	mu.Lock()
	defer mu.Unlock()
	fmt.Println("the first five reports:", strings.Join(order[:5], " "))
	// Output:
	// the first five reports: big small big small big
}

// waitUntil polls cond until it holds.
func waitUntil(cond func() bool) {
	for !cond() {
		time.Sleep(5 * time.Millisecond)
	}
}
