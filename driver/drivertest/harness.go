package drivertest

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// mode is how a twin case runs the operation under test: through the
// driver's own executor, or through a transaction that is committed after.
type mode struct {
	name string
	tx   bool
}

var (
	direct = mode{name: "Executor"}
	viaTx  = mode{name: "Tx", tx: true}
)

// Client IDs used by the tests.
const (
	client1 = "client-1"
	client2 = "client-2"
)

// harness is one subtest's database and clock. Every time it uses is an
// offset from base, so no test depends on the wall clock moving.
type harness[TTx any] struct {
	t    *testing.T
	s    *Setup[TTx]
	ctx  context.Context
	base time.Time
}

func newHarness[TTx any](t *testing.T, s *Setup[TTx]) *harness[TTx] {
	t.Helper()
	require.NotNil(t, s, "newSetup returned nil")
	require.NotNil(t, s.Driver, "Setup.Driver is nil")
	// Whole seconds plus a fixed fraction, so every stored time has
	// microseconds that must survive the round trip.
	base := time.Now().UTC().Truncate(time.Second).Add(123456 * time.Microsecond)
	return &harness[TTx]{t: t, s: s, ctx: t.Context(), base: base}
}

// at returns the harness's base time plus d.
func (h *harness[TTx]) at(d time.Duration) time.Time { return h.base.Add(d) }

// exec returns the driver's own executor.
func (h *harness[TTx]) exec() driver.Executor { return h.s.Driver.Executor() }

// inTx runs fn with an executor over a new transaction, then commits it or
// rolls it back. If fn fails the test, the transaction is rolled back. fn must
// not use the driver's own executor.
func (h *harness[TTx]) inTx(commit bool, fn func(ex driver.Executor)) {
	h.t.Helper()
	tx, err := h.s.Begin(h.ctx)
	require.NoError(h.t, err, "begin")
	ended := false
	defer func() {
		if !ended {
			_ = h.s.Rollback(context.WithoutCancel(h.ctx), tx)
		}
	}()
	fn(h.s.Driver.UnwrapExecutor(tx))
	ended = true
	if commit {
		require.NoError(h.t, h.s.Commit(h.ctx, tx), "commit")
		return
	}
	require.NoError(h.t, h.s.Rollback(h.ctx, tx), "rollback")
}

// via runs fn as mode m says: with the driver's own executor, or inside a
// transaction that is committed when fn returns.
func (h *harness[TTx]) via(m mode, fn func(ex driver.Executor)) {
	h.t.Helper()
	if m.tx {
		h.inTx(true, fn)
		return
	}
	fn(h.exec())
}

// newID returns a random version 4 UUID in its canonical text form.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// newJob returns a job due at base in queue "default", with a topic no
// other job has, so that a claim of that topic claims exactly this job.
func (h *harness[TTx]) newJob() *driver.JobInsert {
	id := newID()
	return &driver.JobInsert{
		ID:         id,
		Topic:      "topic_" + id[:8],
		Queue:      "default",
		Priority:   1,
		Payload:    []byte(`{"id": "` + id + `"}`),
		MaxRetries: 3,
		RunAt:      h.base,
		CreatedAt:  h.at(-time.Second),
	}
}

// jobs returns n new jobs of the given topic.
func (h *harness[TTx]) jobs(n int, topic string) []*driver.JobInsert {
	jobs := make([]*driver.JobInsert, n)
	for i := range jobs {
		jobs[i] = h.newJob()
		jobs[i].Topic = topic
	}
	return jobs
}

// insertVia inserts jobs through ex and returns the results.
func (h *harness[TTx]) insertVia(ex driver.Executor, jobs ...*driver.JobInsert) []driver.JobInsertResult {
	h.t.Helper()
	res, err := ex.JobInsertMany(h.ctx, &driver.JobInsertManyParams{Jobs: jobs})
	require.NoError(h.t, err, "JobInsertMany")
	require.Len(h.t, res, len(jobs), "JobInsertMany results")
	return res
}

// insert inserts jobs through the driver's own executor, requires that none
// was a duplicate, and returns the inserted rows.
func (h *harness[TTx]) insert(jobs ...*driver.JobInsert) []*driver.JobRow {
	h.t.Helper()
	res := h.insertVia(h.exec(), jobs...)
	rows := make([]*driver.JobRow, len(res))
	for i, r := range res {
		require.False(h.t, r.Duplicate, "job %d of the batch is a duplicate", i)
		require.NotNil(h.t, r.Job, "job %d of the batch", i)
		rows[i] = r.Job
	}
	return rows
}

// claimVia claims through ex.
func (h *harness[TTx]) claimVia(ex driver.Executor, p *driver.JobClaimParams) []*driver.JobRow {
	h.t.Helper()
	rows, err := ex.JobClaim(h.ctx, p)
	require.NoError(h.t, err, "JobClaim")
	return rows
}

// claimParams returns params claiming up to 100 jobs of the given topics from
// queue "default" as client1 at now, with a lease of a minute.
func claimParams(now time.Time, topics ...string) *driver.JobClaimParams {
	return &driver.JobClaimParams{
		ClientID:    client1,
		Queue:       "default",
		Topics:      topics,
		Limit:       100,
		Now:         now,
		LockedUntil: now.Add(time.Minute),
	}
}

// claimJob claims the pending job row (by its topic, which no other job has)
// as client at now with a lease until until, and returns the claimed row.
func (h *harness[TTx]) claimJob(row *driver.JobRow, client string, now, until time.Time) *driver.JobRow {
	h.t.Helper()
	rows := h.claimVia(h.exec(), &driver.JobClaimParams{
		ClientID: client, Queue: row.Queue, Topics: []string{row.Topic},
		Limit: 1, Now: now, LockedUntil: until,
	})
	require.Len(h.t, rows, 1, "claim of job %s", row.ID)
	require.Equal(h.t, row.ID, rows[0].ID, "claimed job")
	return rows[0]
}

// started inserts j (a new job if nil) and claims it as client at base with
// a lease ending a minute later. It returns the claimed row, at Attempt 1.
func (h *harness[TTx]) started(client string, j *driver.JobInsert) *driver.JobRow {
	h.t.Helper()
	if j == nil {
		j = h.newJob()
	}
	row := h.insert(j)[0]
	return h.claimJob(row, client, h.base, h.at(time.Minute))
}

// getVia returns the job id read through ex.
func (h *harness[TTx]) getVia(ex driver.Executor, id string) *driver.JobRow {
	h.t.Helper()
	row, err := ex.JobGet(h.ctx, &driver.JobGetParams{ID: id})
	require.NoError(h.t, err, "JobGet %s", id)
	require.NotNil(h.t, row, "JobGet %s", id)
	return row
}

// get returns the job id read through the driver's own executor.
func (h *harness[TTx]) get(id string) *driver.JobRow {
	h.t.Helper()
	return h.getVia(h.exec(), id)
}

// requireStored requires that the stored job want.ID is exactly want.
func (h *harness[TTx]) requireStored(want *driver.JobRow) {
	h.t.Helper()
	requireRow(h.t, want, h.get(want.ID))
}

// requireNotFound requires that no job id exists.
func (h *harness[TTx]) requireNotFound(id string) {
	h.t.Helper()
	row, err := h.exec().JobGet(h.ctx, &driver.JobGetParams{ID: id})
	require.ErrorIs(h.t, err, driver.ErrNotFound, "JobGet %s", id)
	require.Nil(h.t, row, "JobGet %s", id)
}

// finalizeVia finalizes items through ex and returns the matched flags.
func (h *harness[TTx]) finalizeVia(ex driver.Executor, items ...*driver.JobFinalize) []bool {
	h.t.Helper()
	matched, err := ex.JobFinalize(h.ctx, &driver.JobFinalizeParams{Jobs: items})
	require.NoError(h.t, err, "JobFinalize")
	require.Len(h.t, matched, len(items), "JobFinalize results")
	return matched
}

// finalize finalizes items through the driver's own executor and requires
// that every one matched.
func (h *harness[TTx]) finalize(items ...*driver.JobFinalize) {
	h.t.Helper()
	for i, ok := range h.finalizeVia(h.exec(), items...) {
		require.True(h.t, ok, "finalize item %d did not match", i)
	}
}

// rescueVia rescues through ex.
func (h *harness[TTx]) rescueVia(ex driver.Executor, p *driver.JobRescueParams) []*driver.JobRow {
	h.t.Helper()
	rows, err := ex.JobRescue(h.ctx, p)
	require.NoError(h.t, err, "JobRescue")
	return rows
}

// ending returns an item ending row's claim with a final status at at.
func ending(row *driver.JobRow, status driver.JobStatus, at time.Time) *driver.JobFinalize {
	return &driver.JobFinalize{
		ID: row.ID, Attempt: row.Attempt, LockedBy: row.LockedBy, AttemptedAt: row.AttemptedAt,
		Status: status, FinalizedAt: at,
	}
}

// retrying returns an item putting row back to pending until runAt, with
// attempt error e (which may be nil).
func retrying(row *driver.JobRow, runAt time.Time, e *driver.AttemptError) *driver.JobFinalize {
	return &driver.JobFinalize{
		ID: row.ID, Attempt: row.Attempt, LockedBy: row.LockedBy, AttemptedAt: row.AttemptedAt,
		Status: driver.StatusPending, RunAt: runAt, Error: e,
	}
}

// cancelled returns a context that is already cancelled.
func cancelled(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	return ctx
}
