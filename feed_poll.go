package sluice

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// feedReadTimeout bounds one read of the feed.
const feedReadTimeout = 30 * time.Second

// poller is a change feed's reader: one goroutine that reads, once per
// interval, what changed in the table, and turns it into changes.
//
// Each read first counts what changed (JobChanges with CountOnly), and
// when that is more than MaxRows of a part, reports a resync and reads no
// further. Otherwise it asks the driver for the running jobs; the jobs
// that were running at the last read, by ID, to learn what became of those
// no longer running; the jobs whose version 7 IDs fall in the span from
// the last read's time minus the lag to now plus the lag (jobs created
// lately); the jobs finished since the last read's time minus the lag; and
// the jobs requeued or deleted since then (the driver's log of actions).
// A job is reported when its state is newer than the one the poller holds
// for it (see newer), so the overlap of the spans, which catches writes
// committed after the time they record, reports nothing twice. The states
// it holds are forgotten once no read can return them any more.
type poller struct {
	cfg    ChangeFeedConfig
	exec   driver.Executor
	now    func() time.Time
	logger *slog.Logger
	// notes carries what this client enqueued and did to jobs, so it is
	// reported at once.
	notes  chan []note
	ready  *readiness
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	// Owned by run's goroutine.
	mem     map[string]*seen
	running []string
	// lastWall is the wall clock at the last read, for IDs; with its
	// monotonic reading kept (no UTC, no Round), since it also tells the
	// jobs the last read returned (seen.readAt).
	lastWall time.Time
	// lastEnd is when the last read's statements had all returned, by
	// the monotonic clock: notes made before it may be older than what
	// the read saw (see applyNotes).
	lastEnd  time.Time
	lastNow  time.Time // the client's clock at the last read (for times)
	failing  bool
	resynced bool // the last read reported a resync
}

// seen is the state the poller last reported of a job, and when a read or
// a note last returned it (by the wall clock).
type seen struct {
	state   *JobState
	at      time.Time
	deleted bool
	readAt  time.Time // the wall clock of the last read that returned the job
}

// note is a job this client enqueued or acted on, committed.
type note struct {
	state   *JobState
	deleted bool
	// requeued says that the client requeued the job, which the poller
	// may have forgotten since it finished.
	requeued bool
	// sent is when the note was made, after the commit.
	sent time.Time
}

func newPoller[TTx any](c *Client[TTx]) *poller {
	ctx, cancel := context.WithCancel(context.Background())
	return &poller{cfg: c.cfg.ChangeFeed, exec: c.exec, now: c.now, logger: c.cfg.Logger,
		notes: make(chan []note, 256), ready: &readiness{done: make(chan struct{})},
		ctx: ctx, cancel: cancel, done: make(chan struct{}), mem: make(map[string]*seen)}
}

// stop ends the poller and waits for it.
func (p *poller) stop() {
	p.cancel()
	<-p.done
}

// run reads the table's state, then reads what changed every interval and
// publishes it to f, until stopped. If the first read fails, the poller
// detaches itself from f and ends.
func (p *poller) run(f *feed) {
	defer close(p.done)
	p.lastWall, p.lastNow = time.Now(), p.now()
	if _, err := p.read(false); err != nil {
		p.ready.err = err
		close(p.ready.done)
		f.mu.Lock()
		if f.poller == p {
			f.detach()
		}
		f.mu.Unlock()
		return
	}
	close(p.ready.done)
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case ns := <-p.notes:
			f.publish(p, p.applyNotes(ns))
		case <-t.C:
			// Notes that came before the tick go first: a read
			// would otherwise report what they say, and they the
			// same again.
			p.drainNotes(f)
			changes, err := p.read(true)
			if err != nil {
				if !p.failing && p.ctx.Err() == nil {
					p.logger.Warn("sluice: the change feed cannot read the jobs table; it will report a resync once it can",
						"error", err)
				}
				p.failing = true
				continue
			}
			f.publish(p, changes)
		}
	}
}

// read reads what changed since the last read and returns the changes to
// report (none when report is false: the first read learns the state).
func (p *poller) read(report bool) ([]Change, error) {
	ctx, cancel := context.WithTimeout(p.ctx, feedReadTimeout)
	defer cancel()
	wall, now := time.Now(), p.now()
	params := &driver.JobChangesParams{
		Running:        true,
		CreatedFrom:    idFloor(p.lastWall.Add(-p.cfg.Lag)),
		CreatedBefore:  idFloor(wall.Add(p.cfg.Lag)),
		FinalizedSince: p.lastNow.Add(-p.cfg.Lag),
		ActedSince:     p.lastNow.Add(-p.cfg.Lag),
		Limit:          p.cfg.MaxRows + 1,
	}
	// Count first, which reads indexes alone where the database can: when
	// more changed than the feed reads, as in a burn-down, it reads
	// nothing more, and reports a resync.
	count := *params
	count.CountOnly = true
	counted, err := p.exec.JobChanges(ctx, &count)
	if err != nil {
		return nil, fmt.Errorf("count changes: %w", err)
	}
	if c := counted.Counted; max(c.Running, c.Created, c.Finalized, c.Acted) > p.cfg.MaxRows {
		p.lastWall, p.lastNow, p.lastEnd = wall, now, time.Now()
		p.running, p.failing, p.resynced = nil, false, true
		if !report {
			return nil, nil
		}
		return []Change{{Kind: ChangeResync, At: now}}, nil
	}
	if len(p.running) > 0 {
		params.IDs = p.running
	}
	res, err := p.exec.JobChanges(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("read changes: %w", err)
	}
	p.lastWall, p.lastNow, p.lastEnd = wall, now, time.Now()
	changes := p.apply(res, wall)
	p.resynced = p.failing || len(changes) == 1 && changes[0].Kind == ChangeResync
	p.evict(wall)
	if p.failing {
		// Changes older than the lag may have been missed meanwhile.
		p.failing = false
		changes = []Change{{Kind: ChangeResync}}
	}
	if !report {
		return nil, nil
	}
	for i := range changes {
		changes[i].At = now
	}
	return changes, nil
}

// apply updates the states the poller holds from a read and returns the
// changes it shows: one ChangeResync instead when a part was cut at
// MaxRows.
func (p *poller) apply(res *driver.JobChanges, wall time.Time) []Change {
	overflow := false
	for _, part := range [][]*JobState{res.Running, res.Created, res.Finalized, res.Acted, res.Deleted} {
		overflow = overflow || len(part) > p.cfg.MaxRows
	}
	// A later part's reading of a job is never older than an earlier's.
	latest := make(map[string]*JobState, len(res.Running)+len(res.ByID)+len(res.Created)+len(res.Finalized)+len(res.Acted))
	var order []string
	for i, part := range [][]*JobState{res.Running, res.ByID, res.Created, res.Finalized, res.Acted} {
		for _, s := range part {
			if _, ok := latest[s.ID]; !ok {
				order = append(order, s.ID)
			}
			if i == 0 || !overflow || p.mem[s.ID] != nil {
				latest[s.ID] = s
			}
		}
	}
	acted := make(map[string]bool, len(res.Acted))
	for _, s := range res.Acted {
		acted[s.ID] = true
	}
	var changes []Change
	for _, id := range order {
		if s := latest[id]; s != nil {
			if ch, ok := p.observe(s, wall, acted[id]); ok {
				changes = append(changes, ch)
			}
			if m := p.mem[id]; m != nil {
				m.readAt = wall
			}
		}
	}
	if !overflow {
		for _, id := range p.running {
			if _, ok := latest[id]; !ok {
				if ch, ok := p.forget(id, nil, wall); ok {
					changes = append(changes, ch)
				}
			}
		}
		for _, s := range res.Deleted {
			if ch, ok := p.forget(s.ID, s, wall); ok {
				changes = append(changes, ch)
			}
		}
	}
	p.running = p.running[:0]
	for _, s := range res.Running {
		p.running = append(p.running, s.ID)
	}
	if overflow {
		return []Change{{Kind: ChangeResync}}
	}
	return changes
}

// observe records state s of a job read at wall and returns its change,
// if s is newer than the state held; requeued says that the job was
// requeued lately, for a job the poller knew nothing of.
func (p *poller) observe(s *JobState, wall time.Time, requeued bool) (Change, bool) {
	old := p.mem[s.ID]
	var prev *JobState
	if old != nil {
		old.at = wall
		if old.deleted {
			return Change{}, false
		}
		prev = old.state
	}
	if !newer(prev, s) {
		return Change{}, false
	}
	p.mem[s.ID] = &seen{state: s, at: wall}
	kind := kindOf(prev, s)
	if prev == nil && requeued && s.Status == StatusPending {
		kind = ChangeRequeued
	}
	return Change{Kind: kind, Job: s}, true
}

// forget records that job id is gone and returns its ChangeDeleted, if the
// poller knew the job (or s, its last state, is given) and had not
// reported it gone.
func (p *poller) forget(id string, s *JobState, wall time.Time) (Change, bool) {
	old := p.mem[id]
	if old == nil {
		if s == nil {
			return Change{}, false
		}
		old = &seen{state: s}
		p.mem[id] = old
	}
	old.at = wall
	if old.deleted {
		return Change{}, false
	}
	old.deleted = true
	return Change{Kind: ChangeDeleted, Job: old.state}, true
}

// evict forgets the states no read can return any more: those no read
// returned for longer than the lag and a few intervals.
func (p *poller) evict(wall time.Time) {
	horizon := wall.Add(-p.cfg.Lag - 3*p.cfg.Interval)
	for id, s := range p.mem {
		if s.at.Before(horizon) {
			delete(p.mem, id)
		}
	}
}

// drainNotes publishes the notes waiting for the poller when it is
// called, not those that come meanwhile.
func (p *poller) drainNotes(f *feed) {
	for range len(p.notes) {
		select {
		case ns := <-p.notes:
			f.publish(p, p.applyNotes(ns))
		default:
			return
		}
	}
}

// applyNotes records what this client enqueued or did and returns the
// changes it shows.
//
// A note made before the last read ended is passed over when that read
// returned the job, or reported a resync. Either the read saw the note's
// commit, or a later state of the job, and reported it; or the commit came
// after the read's statement, and the next read reports it, an interval
// later. Applied after the read, it could report the job going back to
// where it was: a job cancelled, requeued and cancelled again, whose
// requeue's note came while a read saw the second cancel, would be
// reported requeued once more. A note of a job the read did not return (an
// enqueue whose ID is not of its time, from Config.NewJobID) is applied:
// it is the job's only report. A deleted job stays deleted, so its note
// is always applied.
func (p *poller) applyNotes(ns []note) []Change {
	wall, now := time.Now(), p.now()
	var changes []Change
	for _, n := range ns {
		var ch Change
		var ok bool
		if !n.deleted && n.sent.Before(p.lastEnd) && (p.resynced || p.readByLast(n.state.ID)) {
			continue
		}
		if n.deleted {
			ch, ok = p.forget(n.state.ID, n.state, wall)
		} else {
			ch, ok = p.observe(n.state, wall, n.requeued)
		}
		if ok {
			ch.At = now
			changes = append(changes, ch)
		}
	}
	return changes
}

// running reports whether a poller runs.
func (f *feed) running() bool { return f.current.Load() != nil }

// note tells a running feed about jobs this client enqueued or acted on,
// committed: deleted ones, or others as they are now. It costs an atomic
// load when no feed runs, and never blocks: a note that does not fit is
// left to the next read.
func (f *feed) note(rows []*JobRow, deleted bool) { f.post(rows, deleted, false) }

// noteRequeued is note of jobs this client requeued: they are reported
// requeued even when the feed has forgotten that they had finished.
func (f *feed) noteRequeued(rows []*JobRow) { f.post(rows, false, true) }

func (f *feed) post(rows []*JobRow, deleted, requeued bool) {
	p := f.current.Load()
	if p == nil || len(rows) == 0 {
		return
	}
	ns := make([]note, len(rows))
	sent := time.Now()
	for i, r := range rows {
		ns[i] = note{state: r.State(), deleted: deleted, requeued: requeued, sent: sent}
	}
	select {
	case p.notes <- ns:
	default:
	}
}

// newer reports whether state s of a job is newer than old, the state last
// reported (nil if none). An attempt is ordered by its number; within one,
// processing comes first (a claim starts it), and its progress and the
// count of records logged only move forward; any other status after it is
// newer when it differs.
func newer(old, s *JobState) bool {
	switch {
	case old == nil:
		return true
	case s.Attempt != old.Attempt:
		return s.Attempt > old.Attempt
	case s.Status == StatusProcessing:
		return old.Status == StatusProcessing && (progressAt(s).After(progressAt(old)) || s.Logged > old.Logged)
	}
	return s.Status != old.Status
}

func progressAt(s *JobState) time.Time {
	if s.Progress == nil {
		return time.Time{}
	}
	return s.Progress.At
}

// kindOf names the change from state old (nil if unknown) to s.
func kindOf(old, s *JobState) ChangeKind {
	switch s.Status {
	case StatusProcessing:
		switch {
		case old == nil || old.Status != StatusProcessing || old.Attempt != s.Attempt:
			return ChangeStarted
		case progressAt(s).After(progressAt(old)):
			return ChangeProgressed
		}
		return ChangeLogged
	case StatusPending:
		switch {
		case old != nil && (old.Status == StatusFailed || old.Status == StatusCancelled):
			return ChangeRequeued
		case s.Attempt == 0:
			return ChangeEnqueued
		}
		return ChangeRetried
	case StatusCompleted:
		return ChangeCompleted
	case StatusFailed:
		return ChangeFailed
	}
	return ChangeCancelled
}

// idFloor returns the smallest UUID of t's millisecond: version 7 UUIDs
// start with their creation time in milliseconds since the epoch, so the
// IDs from idFloor(a) to idFloor(b) are those of jobs created from a to b.
func idFloor(t time.Time) string {
	ms := t.UnixMilli()
	return fmt.Sprintf("%08x-%04x-0000-0000-000000000000", ms>>16, ms&0xffff)
}

// insertedRows returns the jobs an enqueue inserted: not the duplicates.
func insertedRows(results []driver.JobInsertResult) []*JobRow {
	var rows []*JobRow
	for _, r := range results {
		if !r.Duplicate {
			rows = append(rows, r.Job)
		}
	}
	return rows
}

// readByLast reports whether the last read returned job id.
func (p *poller) readByLast(id string) bool {
	m := p.mem[id]
	return m != nil && m.readAt.Equal(p.lastWall)
}
