package pgxdriver

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// clientsTable returns the quoted, qualified table of client records:
// <table>_clients.
func (d *Driver) clientsTable() string { return d.ident(d.table + "_clients") }

// ClientRecord upserts the client's record and prunes stale ones in one
// round trip.
func (e *executor) ClientRecord(ctx context.Context, p *driver.ClientRecordParams) error {
	const op = "record client"
	if err := e.start(ctx, op); err != nil {
		return err
	}
	if p == nil {
		return errors.New("pgxdriver: record client: nil params")
	}
	c := p.Client
	if err := driver.CheckKey("ID", c.ID); err != nil {
		return wrapErr(ctx, op, err)
	}
	topics, queues := rowcodec.ClientNames(&c)
	err := e.atomic(ctx, func(db dbtx) error {
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO `+e.d.clientsTable()+` (id, host, pid, topics, queues, started_at, seen_at, max_workers)
VALUES ($1, $2, $3, $4::text::jsonb, $5::text::jsonb, $6, $7, $8::text::jsonb)
ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, topics = excluded.topics,
	queues = excluded.queues, seen_at = excluded.seen_at, max_workers = excluded.max_workers`,
			c.ID, c.Host, c.PID, topics, queues, c.StartedAt, c.SeenAt, rowcodec.ClientMaxWorkers(&c))
		if !p.PruneBefore.IsZero() {
			b.Queue(`DELETE FROM `+e.d.clientsTable()+` WHERE seen_at < $1 AND id <> $2`, p.PruneBefore, c.ID)
		}
		return db.SendBatch(ctx, b).Close()
	})
	return wrapErr(ctx, op, err)
}

// ClientList reads the client records.
func (e *executor) ClientList(ctx context.Context, p *driver.ClientListParams) ([]*driver.ClientRow, error) {
	const op = "list clients"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: list clients: nil params")
	}
	rows, err := e.db.Query(ctx, `SELECT id, host, pid, topics::text, queues::text, started_at, seen_at,
	max_workers::text
FROM `+e.d.clientsTable()+` WHERE seen_at >= $1 ORDER BY id`, p.SeenSince)
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	out := []*driver.ClientRow{}
	var (
		c              driver.ClientRow
		topics, queues string
		maxWorkers     *string
	)
	dest := []any{&c.ID, &c.Host, &c.PID, &topics, &queues, &c.StartedAt, &c.SeenAt, &maxWorkers}
	_, err = pgx.ForEachRow(rows, dest, func() error {
		row := c
		row.StartedAt, row.SeenAt = c.StartedAt.UTC(), c.SeenAt.UTC()
		if err := rowcodec.DecodeClientNames(topics, queues, &row); err != nil {
			return err
		}
		if err := rowcodec.DecodeClientMaxWorkers(maxWorkers, &row); err != nil {
			return err
		}
		out = append(out, &row)
		return nil
	})
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return out, nil
}

// ClientForget deletes the client's record.
func (e *executor) ClientForget(ctx context.Context, p *driver.ClientForgetParams) error {
	const op = "forget client"
	if err := e.start(ctx, op); err != nil {
		return err
	}
	if p == nil {
		return errors.New("pgxdriver: forget client: nil params")
	}
	if !driver.Matchable(p.ID) {
		return nil // no such client
	}
	_, err := e.db.Exec(ctx, `DELETE FROM `+e.d.clientsTable()+` WHERE id = $1`, p.ID)
	return wrapErr(ctx, op, err)
}
