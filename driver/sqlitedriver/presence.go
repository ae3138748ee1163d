package sqlitedriver

import (
	"context"
	"errors"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// ClientRecord upserts the client's record and prunes stale ones in one
// write.
func (e *executor) ClientRecord(ctx context.Context, p *driver.ClientRecordParams) error {
	const op = "record client"
	if p == nil {
		return errors.New("sqlitedriver: record client: nil params")
	}
	c := p.Client
	if err := driver.CheckKey("ID", c.ID); err != nil {
		return wrapErr(ctx, op, err)
	}
	topics, queues := rowcodec.ClientNames(&c)
	upsert := `INSERT INTO ` + e.d.sqlClients() + ` (id, host, pid, topics, queues, started_at, seen_at, max_workers)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, topics = excluded.topics,
	queues = excluded.queues, seen_at = excluded.seen_at, max_workers = excluded.max_workers`
	prune := `DELETE FROM ` + e.d.sqlClients() + ` WHERE seen_at < ? AND id <> ?`
	return e.writeTx(ctx, op, []string{upsert, prune}, func(r runner) error {
		if _, err := r.exec(ctx, upsert, c.ID, c.Host, c.PID, topics, queues, micros(c.StartedAt), micros(c.SeenAt),
			rowcodec.ClientMaxWorkers(&c)); err != nil {
			return err
		}
		if p.PruneBefore.IsZero() {
			return nil
		}
		_, err := r.exec(ctx, prune, micros(p.PruneBefore), c.ID)
		return err
	})
}

// ClientList reads the client records.
func (e *executor) ClientList(ctx context.Context, p *driver.ClientListParams) ([]*driver.ClientRow, error) {
	if p == nil {
		return nil, errors.New("sqlitedriver: list clients: nil params")
	}
	out := []*driver.ClientRow{}
	err := e.read(ctx, "list clients", func(r runner) error {
		rows, err := r.query(ctx, `SELECT id, host, pid, topics, queues, started_at, seen_at, max_workers
FROM `+e.d.sqlClients()+` WHERE seen_at >= ? ORDER BY id`, micros(p.SeenSince))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				c              driver.ClientRow
				topics, queues string
				started, seen  int64
				maxWorkers     *string
			)
			if err := rows.Scan(&c.ID, &c.Host, &c.PID, &topics, &queues, &started, &seen, &maxWorkers); err != nil {
				return err
			}
			c.StartedAt, c.SeenAt = fromMicros(started), fromMicros(seen)
			if err := rowcodec.DecodeClientNames(topics, queues, &c); err != nil {
				return err
			}
			if err := rowcodec.DecodeClientMaxWorkers(maxWorkers, &c); err != nil {
				return err
			}
			out = append(out, &c)
		}
		return rows.Close()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ClientForget deletes the client's record.
func (e *executor) ClientForget(ctx context.Context, p *driver.ClientForgetParams) error {
	if p == nil {
		return errors.New("sqlitedriver: forget client: nil params")
	}
	return e.write(ctx, "forget client", func(r runner) error {
		_, err := r.exec(ctx, `DELETE FROM `+e.d.sqlClients()+` WHERE id = ?`, p.ID)
		return err
	})
}
