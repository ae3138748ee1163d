package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sluicehq/sluice"
)

// MailArgs send a mail; about one in eight attempts fails and is retried.
type MailArgs struct {
	To string `json:"to"`
}

// Topic implements sluice.JobArgs.
func (MailArgs) Topic() string { return "mail_digest" }

// ResizeArgs resize an image, reporting progress; now and then one panics.
type ResizeArgs struct {
	Image string `json:"image"`
	Width int    `json:"width"`
}

// Topic implements sluice.JobArgs.
func (ResizeArgs) Topic() string { return "resize_image" }

// ReportArgs build a report of some pages, slowly, reporting each page.
type ReportArgs struct {
	Name  string `json:"name"`
	Pages int    `json:"pages"`
}

// Topic implements sluice.JobArgs.
func (ReportArgs) Topic() string { return "build_report" }

// ChargeArgs charge a card; a third of attempts are declined, and with
// two retries some charges fail for good.
type ChargeArgs struct {
	Customer string `json:"customer"`
	Cents    int    `json:"cents"`
}

// Topic implements sluice.JobArgs.
func (ChargeArgs) Topic() string { return "charge_card" }

// SyncArgs sync an account with a CRM; they are enqueued for later.
type SyncArgs struct {
	Account string `json:"account"`
}

// Topic implements sluice.JobArgs.
func (SyncArgs) Topic() string { return "sync_crm" }

// CleanupArgs are the periodic clean-up's.
type CleanupArgs struct{}

// Topic implements sluice.JobArgs.
func (CleanupArgs) Topic() string { return "cleanup" }

func demoWorkers() *sluice.Workers {
	w := sluice.NewWorkers()
	sluice.AddWorker(w, sluice.WorkFunc(sendMail))
	sluice.AddWorker(w, sluice.WorkFunc(resizeImage))
	sluice.AddWorker(w, sluice.WorkFunc(buildReport))
	sluice.AddWorker(w, sluice.WorkFunc(chargeCard))
	sluice.AddWorker(w, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[SyncArgs]) error {
		return pause(ctx, time.Second)
	}))
	sluice.AddWorker(w, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[CleanupArgs]) error {
		sluice.Logger(ctx).Info("removed expired sessions", "count", rand.IntN(40))
		return nil
	}))
	return w
}

func sendMail(ctx context.Context, job *sluice.Job[MailArgs]) error {
	if err := pause(ctx, time.Duration(100+rand.IntN(400))*time.Millisecond); err != nil {
		return err
	}
	if rand.IntN(8) == 0 {
		return fmt.Errorf("smtp: 421 4.7.0 try again later (to %s)", job.Args.To)
	}
	sluice.Logger(ctx).Info("sent", "to", job.Args.To)
	return nil
}

func resizeImage(ctx context.Context, job *sluice.Job[ResizeArgs]) error {
	log := sluice.Logger(ctx)
	log.Info("resizing", "image", job.Args.Image, "width", job.Args.Width)
	steps := 8 + rand.IntN(8)
	for i := range steps {
		if err := pause(ctx, 600*time.Millisecond); err != nil {
			return err
		}
		_ = sluice.ReportProgress(ctx, float64(i+1)*100/float64(steps), fmt.Sprintf("tile %d of %d", i+1, steps))
		if i == steps/2 && rand.IntN(10) == 0 {
			var tiles []int
			_ = tiles[i] // a bug: the panic is recorded with its stack
		}
	}
	log.Info("resized", "image", job.Args.Image, "bytes", 40000+rand.IntN(900000))
	return sluice.SetResult(ctx, map[string]any{"url": "https://cdn.example/" + job.Args.Image, "width": job.Args.Width})
}

func buildReport(ctx context.Context, job *sluice.Job[ReportArgs]) error {
	log := sluice.Logger(ctx)
	for p := range job.Args.Pages {
		if err := pause(ctx, time.Duration(1500+rand.IntN(2000))*time.Millisecond); err != nil {
			return err
		}
		_ = sluice.ReportProgress(ctx, float64(p+1)*100/float64(job.Args.Pages), fmt.Sprintf("rendered page %d of %d", p+1, job.Args.Pages))
		if rand.IntN(5) == 0 {
			log.Warn("slow query", "page", p+1, "ms", 800+rand.IntN(2000))
		} else {
			log.Info("page rendered", "page", p+1)
		}
	}
	return nil
}

func chargeCard(ctx context.Context, job *sluice.Job[ChargeArgs]) error {
	if err := pause(ctx, time.Duration(200+rand.IntN(600))*time.Millisecond); err != nil {
		return err
	}
	if rand.IntN(3) == 0 {
		sluice.Logger(ctx).Warn("card declined", "customer", job.Args.Customer, "cents", job.Args.Cents)
		return errors.New("payment gateway: card_declined (insufficient_funds)")
	}
	return nil
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
