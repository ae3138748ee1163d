package sqlitedriver

import (
	"context"
	"encoding/json"

	"github.com/sluicehq/sluice/driver"
)

// countMove is a change of status of jobs of one queue and topic.
type countMove struct {
	from, to     driver.JobStatus
	queue, topic string
}

// countMoves adds up the jobs a claim or a completion moved from one status
// to another, which the count trigger leaves to the statement that moved
// them (see migration 0004).
type countMoves map[countMove]int

// add records one job of queue and topic moved from status from to to.
func (m *countMoves) add(from, to driver.JobStatus, queue, topic string) {
	m.addN(from, to, queue, topic, 1)
}

// addN records n jobs of queue and topic moved from status from to to.
func (m *countMoves) addN(from, to driver.JobStatus, queue, topic string, n int) {
	if *m == nil {
		*m = make(countMoves)
	}
	(*m)[countMove{from, to, queue, topic}] += n
}

// addIDs records the jobs ids, which a statement just moved from status
// from to the statuses they have now, reading their statuses, queues and
// topics in one query through r.
func (m *countMoves) addIDs(ctx context.Context, r runner, from driver.JobStatus, ids []string) error {
	list, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	rows, err := r.query(ctx, r.d.q.countIDs, string(list))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			to           driver.JobStatus
			queue, topic string
			n            int
		)
		if err := rows.Scan(&to, &queue, &topic, &n); err != nil {
			return err
		}
		m.addN(from, to, queue, topic, n)
	}
	return rows.Close()
}

// apply writes the moves to the counts, through r, in the transaction of
// the statement that made them.
func (m countMoves) apply(ctx context.Context, r runner) error {
	if len(m) == 0 {
		return nil
	}
	exec, done := r.execer(ctx, r.d.q.count)
	defer done()
	for mv, n := range m {
		if _, err := exec(string(mv.from), mv.queue, mv.topic, -n); err != nil {
			return err
		}
		if _, err := exec(string(mv.to), mv.queue, mv.topic, n); err != nil {
			return err
		}
	}
	return nil
}
