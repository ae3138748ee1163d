package sluice_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// ResizeArgs resize one photo of an album.
type ResizeArgs struct {
	Photo string `json:"photo"`
}

func (ResizeArgs) Topic() string { return "resize" }

// AlbumArgs build an album from the resized photos.
type AlbumArgs struct {
	Album string `json:"album"`
}

func (AlbumArgs) Topic() string { return "album" }

// MailArgs mail someone about an album.
type MailArgs struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

func (MailArgs) Topic() string { return "mail" }

// Resize every photo, then build the album from what the resizes returned,
// then mail the owner; if a resize fails for good, the album and the
// owner's mail never run and support is mailed instead. The whole graph is
// enqueued in one transaction.
func ExampleClient_EnqueueWorkflow() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	var (
		mu     sync.Mutex
		mailed []string
	)
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[ResizeArgs]) error {
		return sluice.SetResult(ctx, "small-"+job.Args.Photo) // where the resized photo went
	}))
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[AlbumArgs]) error {
		// One read serves every dependency's result.
		deps, err := sluice.Dependencies(ctx)
		if err != nil {
			return err
		}
		var photos []string
		for _, d := range deps {
			photo, err := sluice.DependencyResult[string](ctx, d.Task)
			if err != nil {
				return err
			}
			photos = append(photos, photo)
		}
		slices.Sort(photos)
		return sluice.SetResult(ctx, photos)
	}))
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[MailArgs]) error {
		mu.Lock()
		defer mu.Unlock()
		mailed = append(mailed, job.Args.To+": "+job.Args.Subject)
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{
		Workers: workers, Logger: quiet, PollInterval: 10 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}

	w := sluice.NewWorkflow("album summer")
	var resizes []string
	for _, photo := range []string{"beach.jpg", "dunes.jpg", "pier.jpg"} {
		task := "resize " + photo
		w.Add(task, ResizeArgs{Photo: photo}, nil)
		resizes = append(resizes, task)
	}
	w.Add("album", AlbumArgs{Album: "summer"}, nil, resizes...)
	w.Add("mail owner", MailArgs{To: "owner", Subject: "your album is ready"}, nil, "album")
	w.OnFailure(MailArgs{To: "support", Subject: "album summer failed"}, nil)
	res, err := client.EnqueueWorkflow(ctx, w)
	if err != nil {
		log.Fatal(err)
	}

	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	var g *sluice.Group
	waitUntil(func() bool {
		g, err = client.GetWorkflow(ctx, res.ID)
		return err == nil && g.Status == sluice.GroupCompleted
	})
	album, err := client.Get(ctx, res.Tasks["album"].ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(g.Status, g.Counts[sluice.StatusCompleted], "tasks")
	fmt.Println("album:", string(album.Result))
	mu.Lock()
	defer mu.Unlock()
	fmt.Println("mailed:", mailed)
	// Output:
	// completed 5 tasks
	// album: ["small-beach.jpg","small-dunes.jpg","small-pier.jpg"]
	// mailed: [owner: your album is ready]
}

// ImportArgs import one file.
type ImportArgs struct {
	File string `json:"file"`
}

func (ImportArgs) Topic() string { return "import" }

// Import files as one batch: when the last of them is done, one callback
// runs, chosen by the outcome; it is enqueued in the same transaction as
// the outcome that finished the batch, so it runs exactly once even if
// that worker's process is killed.
func ExampleClient_EnqueueBatch() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	var (
		mu     sync.Mutex
		mailed []string
	)
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[ImportArgs]) error {
		if job.Args.File == "broken.csv" {
			return sluice.Cancel(fmt.Errorf("%s: not a CSV file", job.Args.File))
		}
		return nil
	}))
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[MailArgs]) error {
		mu.Lock()
		defer mu.Unlock()
		mailed = append(mailed, job.Args.To+": "+job.Args.Subject)
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{
		Workers: workers, Logger: quiet, PollInterval: 10 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}

	b := sluice.NewBatch("import monday")
	for _, file := range []string{"a.csv", "b.csv", "broken.csv"} {
		b.Add(ImportArgs{File: file}, nil)
	}
	b.OnSuccess(MailArgs{To: "ops", Subject: "import done"}, nil)
	b.OnFailure(MailArgs{To: "ops", Subject: "import needs a look"}, nil)
	res, err := client.EnqueueBatch(ctx, b)
	if err != nil {
		log.Fatal(err)
	}

	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	waitUntil(func() bool { mu.Lock(); defer mu.Unlock(); return len(mailed) == 1 })
	g, err := client.GetBatch(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(g.Status, g.Counts)
	mu.Lock()
	defer mu.Unlock()
	fmt.Println("mailed:", mailed)
	// Output:
	// failed map[cancelled:1 completed:2]
	// mailed: [ops: import needs a look]
}
