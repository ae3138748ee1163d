package sluicetest

import (
	"testing"

	"github.com/sluicehq/sluice"
)

// Work enqueues args with opts on client and works the job at once with
// the client's worker for its topic, as a started client would (see
// sluice.Client.WorkNext), then returns the job as it is afterwards:
// completed, pending again for a retry or a snooze (its RunAt tells when:
// advance the Clock and call sluice.Client.WorkNext to run it again),
// failed or cancelled, with the worker's error in its Errors. The client
// needs workers, but need not be started.
//
// The job must be the first due job of the client's topics in its queue,
// so Work fails the test, working nothing, when another job of those
// topics is due there at or before it with the same or an earlier priority
// (claims take jobs by priority, then run_at): give each test a database of its own
// (NewMemoryDriver). A job delayed past the client's clock is not due:
// Work fails the test then too.
func Work[T sluice.JobArgs, TTx any](tb testing.TB, client *sluice.Client[TTx], args T, opts *sluice.EnqueueOptions) *sluice.JobRow {
	tb.Helper()
	res, err := client.Enqueue(tb.Context(), args, opts)
	if err != nil {
		tb.Fatalf("sluicetest: work: %v", err)
		return nil
	}
	return work(tb, res, client.Topics(), lister(tb, client, nil), func(queue string) (*sluice.JobRow, error) {
		return client.WorkNext(tb.Context(), queue)
	})
}

// WorkTx is Work inside tx: the job is enqueued, claimed and finished in
// tx, so the worker may Ack or Nack it in tx, and a rollback undoes it all,
// with the worker's own writes in tx. On SQLite, whose writers take turns,
// the worker must use tx for its writes, not the client's handle.
func WorkTx[T sluice.JobArgs, TTx any](tb testing.TB, client *sluice.Client[TTx], tx TTx, args T, opts *sluice.EnqueueOptions) *sluice.JobRow {
	tb.Helper()
	res, err := client.EnqueueTx(tb.Context(), tx, args, opts)
	if err != nil {
		tb.Fatalf("sluicetest: work: %v", err)
		return nil
	}
	return work(tb, res, client.Topics(), lister(tb, client, &tx), func(queue string) (*sluice.JobRow, error) {
		return client.WorkNextTx(tb.Context(), tx, queue)
	})
}

// work works the job enqueued as res with workNext, after checking that
// no other job of the client's topics is due before it in its queue.
func work(tb testing.TB, res *sluice.EnqueueResult, topics []string, list listFunc, workNext func(queue string) (*sluice.JobRow, error)) *sluice.JobRow {
	tb.Helper()
	job := res.Job
	if res.Duplicate {
		tb.Fatalf("sluicetest: work: nothing enqueued: job %s (%s) has the unique key %q", job.ID, job.Status, job.UniqueKey)
		return nil
	}
	if len(topics) == 0 {
		tb.Fatalf("sluicetest: work: the client has no workers")
		return nil
	}
	jobs, ok := list(topics)
	if !ok {
		return nil
	}
	for _, other := range jobs {
		// Claims take the due jobs by priority, then run_at: another job
		// due when this one is, and not of a later priority, comes first.
		if other.ID != job.ID && other.Queue == job.Queue && other.Status == sluice.StatusPending && !other.Waiting &&
			!other.RunAt.After(job.RunAt) && other.Priority <= job.Priority {
			tb.Fatalf("sluicetest: work: job %s (%s) is due before job %s in queue %q: give the test a database of its own",
				other.ID, other.Topic, job.ID, job.Queue)
			return nil
		}
	}
	row, err := workNext(job.Queue)
	switch {
	case err != nil:
		tb.Fatalf("sluicetest: work: %v", err)
		return nil
	case row == nil:
		tb.Fatalf("sluicetest: work: job %s is not due: its run_at %s is after the client's clock, or no worker has topic %q",
			job.ID, job.RunAt, job.Topic)
		return nil
	case row.ID != job.ID:
		tb.Fatalf("sluicetest: work: worked job %s (%s) instead of job %s", row.ID, row.Topic, job.ID)
		return nil
	}
	return row
}
