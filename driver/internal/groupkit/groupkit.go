// Package groupkit holds what both drivers do alike for groups of jobs
// (workflows and batches): checking a group and its jobs before they are
// stored, and building the callback jobs of the groups a transaction
// settles.
package groupkit

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// Prepare checks the group and the jobs of p, sets each job's GroupID, and
// returns the group as it will be stored and the jobs.
func Prepare(p *driver.GroupInsertParams) (*driver.GroupRow, []*driver.JobInsert, error) {
	if p == nil {
		return nil, nil, fmt.Errorf("nil params")
	}
	g := p.Group
	switch {
	case g.Kind != driver.GroupWorkflow && g.Kind != driver.GroupBatch:
		return nil, nil, fmt.Errorf("kind %q is not %q or %q", g.Kind, driver.GroupWorkflow, driver.GroupBatch)
	case len(p.Jobs) > driver.MaxGroupJobs:
		return nil, nil, fmt.Errorf("%d jobs, more than %d", len(p.Jobs), driver.MaxGroupJobs)
	}
	if err := driver.CheckKey("group name", g.Name); err != nil {
		return nil, nil, err
	}
	jobs, err := prepareJobs(g.ID, p.Jobs)
	if err != nil {
		return nil, nil, err
	}
	if c := g.Callbacks; c != nil {
		for _, list := range [][]*driver.JobInsert{c.OnSuccess, c.OnFailure, c.OnComplete} {
			for i, j := range list {
				if j == nil || j.UniqueKey != "" || j.GroupID != "" || len(j.DependsOn) > 0 {
					return nil, nil, fmt.Errorf("callback %d: nil, or with a unique key, a group or dependencies", i)
				}
			}
		}
	}
	g.CreatedAt = g.CreatedAt.UTC().Truncate(time.Microsecond)
	g.Counts = nil
	return &g, jobs, nil
}

// PrepareAdd checks the jobs added to a group by p and sets their GroupID.
func PrepareAdd(p *driver.GroupAddParams) ([]*driver.JobInsert, error) {
	if p == nil {
		return nil, fmt.Errorf("nil params")
	}
	if len(p.Jobs) > driver.MaxGroupJobs {
		return nil, fmt.Errorf("%d jobs, more than %d", len(p.Jobs), driver.MaxGroupJobs)
	}
	return prepareJobs(p.ID, p.Jobs)
}

// prepareJobs checks jobs for a group and sets their GroupID to id.
func prepareJobs(id string, jobs []*driver.JobInsert) ([]*driver.JobInsert, error) {
	for i, j := range jobs {
		switch {
		case j == nil:
			return nil, fmt.Errorf("job %d is nil", i)
		case j.UniqueKey != "":
			return nil, fmt.Errorf("job %d has a unique key: the jobs of a group cannot be turned away", i)
		case len(j.DependsOn) > 0 && !j.OnDependencyFailure.Valid():
			return nil, fmt.Errorf("job %d: dependency policy %q is not %q or %q", i, j.OnDependencyFailure,
				driver.DependencyCancel, driver.DependencyRun)
		case j.Sequence != "" && (!j.Sequence.Valid() || j.Key == ""):
			return nil, fmt.Errorf("job %d: sequence policy %q needs a key", i, j.Sequence)
		}
		if err := driver.CheckKey("task", j.Task); err != nil {
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
		j.GroupID = id
	}
	return jobs, nil
}

// CallbacksJSON returns c as stored, nil when c holds no job.
func CallbacksJSON(c *driver.GroupCallbacks) ([]byte, error) {
	if c == nil || len(c.OnSuccess)+len(c.OnFailure)+len(c.OnComplete) == 0 {
		return nil, nil
	}
	return json.Marshal(c)
}

// Outcome returns the outcome of a done group: failure when one of its
// jobs failed or was cancelled, else success.
func Outcome(failed bool) driver.GroupOutcome {
	if failed {
		return driver.OutcomeFailure
	}
	return driver.OutcomeSuccess
}

// Callbacks returns the jobs to insert for groups settled at now, each
// with its Outcome set: OnSuccess or OnFailure by the outcome, then
// OnComplete; each with CallbackOf the group's ID, CreatedAt now, and
// RunAt as far after now as it was after its CreatedAt.
func Callbacks(groups []*driver.GroupRow, now time.Time) []*driver.JobInsert {
	var out []*driver.JobInsert
	for _, g := range groups {
		c := g.Callbacks
		if c == nil {
			continue
		}
		list := c.OnSuccess
		if g.Outcome == driver.OutcomeFailure {
			list = c.OnFailure
		}
		for _, j := range append(slices.Clip(list), c.OnComplete...) {
			cb := *j
			cb.CallbackOf = g.ID
			cb.RunAt = now.Add(max(0, j.RunAt.Sub(j.CreatedAt)))
			cb.CreatedAt = now
			out = append(out, &cb)
		}
	}
	return out
}

// Queues returns the queues of jobs, each once.
func Queues(jobs []*driver.JobInsert) []string {
	var queues []string
	for _, j := range jobs {
		if !slices.Contains(queues, j.Queue) {
			queues = append(queues, j.Queue)
		}
	}
	return queues
}

// Decode sets g's Callbacks from their stored JSON (none when empty), and,
// when counts is not nil, its Counts from theirs (a JSON object of counts
// by status; none when empty).
func Decode(g *driver.GroupRow, callbacks, counts []byte, withCounts bool) error {
	if len(callbacks) > 0 {
		g.Callbacks = new(driver.GroupCallbacks)
		if err := json.Unmarshal(callbacks, g.Callbacks); err != nil {
			return fmt.Errorf("group %s: decode callbacks: %w", g.ID, err)
		}
	}
	if !withCounts {
		return nil
	}
	g.Counts = map[driver.JobStatus]int{}
	if len(counts) > 0 {
		if err := json.Unmarshal(counts, &g.Counts); err != nil {
			return fmt.Errorf("group %s: decode counts: %w", g.ID, err)
		}
	}
	return nil
}
