package pgxdriver

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/driver"
)

// Bounds of the delay between attempts to reconnect a listener whose
// connection dropped. The delay doubles after each failed attempt.
const (
	reconnectMin = 50 * time.Millisecond
	reconnectMax = 5 * time.Second
)

// Listen calls fn with a queue's name each time jobs are inserted into that
// queue by any process using the same table, until ctx ends or stop is
// called. Every insert runs pg_notify on [Driver.Channel] in its own
// transaction, so the notification arrives only once that transaction has
// committed, and Committed is always true.
//
// Listen opens one connection of its own (it takes no connection from the
// pool) and runs LISTEN on it before it returns; it returns an error if
// that fails. The connection is made with the configuration given to
// [WithListenURL], or else with the pool's. If the connection drops later,
// Listen reconnects on its own, waiting between attempts from 50 ms up to
// 5 s; notifications sent meanwhile are lost, which a polling client
// tolerates. fn runs on the listener's goroutine and must not block, nor
// call stop.
//
// A LISTEN needs a session, which a pooler in transaction mode does not
// keep: the LISTEN would stay behind on whichever server connection ran
// it. So on a connection made with the pool's configuration, Listen first
// checks that it reaches the server directly (the backend's process ID is
// the one the server announced at connection: a pooler announces its own)
// and returns [ErrListenThroughPooler] when it does not, before running
// LISTEN; the client then polls.
//
// The pool's BeforeConnect and AfterConnect hooks do not run for the
// listener's connection. Where those hooks supply credentials (short-lived
// tokens, say), Listen cannot connect with the pool's configuration; give
// one with WithListenURL, or use WithoutListen or Config.PollOnly, and the
// client polls.
//
// stop ends the listener, closes its connection and waits for its
// goroutine: once stop has returned, fn is not called again. stop is
// idempotent, and the returned stop is never nil. On a driver created with
// [WithoutListen], Listen returns [ErrListenDisabled].
func (d *Driver) Listen(ctx context.Context, fn func(driver.Notification)) (stop func(), err error) {
	noop := func() {}
	switch {
	case d.err != nil:
		return noop, d.err
	case d.noListen:
		return noop, ErrListenDisabled
	case fn == nil:
		return noop, errors.New("pgxdriver: listen: nil func")
	}
	conn, err := d.listenConn(ctx)
	if errors.Is(err, ErrListenThroughPooler) {
		return noop, err
	}
	if err != nil {
		return noop, wrapErr(ctx, "listen", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.listenLoop(ctx, conn, fn)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}, nil
}

// listenConn opens the listener's connection and runs LISTEN on it: with
// [WithListenURL]'s configuration, or with the pool's once the connection
// is found to reach the server directly.
func (d *Driver) listenConn(ctx context.Context) (*pgx.Conn, error) {
	cfg := d.listenCfg
	if cfg == nil {
		cfg = d.pool.Config().ConnConfig
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if d.listenCfg == nil {
		err = checkDirect(ctx, conn)
	}
	if err == nil {
		_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{d.channel()}.Sanitize())
	}
	if err != nil {
		closeConn(conn)
		return nil, err
	}
	return conn, nil
}

// checkDirect returns [ErrListenThroughPooler] if conn goes through a
// connection pooler. The server announces its backend's process ID when a
// connection starts, as the key of cancel requests; a pooler announces a
// key of its own instead, since it forwards cancel requests to whichever
// server connection the client is using at the time.
func checkDirect(ctx context.Context, conn *pgx.Conn) error {
	var pid uint32
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()", pgx.QueryExecModeSimpleProtocol).Scan(&pid); err != nil {
		return err
	}
	if pid != conn.PgConn().PID() {
		return ErrListenThroughPooler
	}
	return nil
}

// listenLoop delivers conn's notifications to fn until ctx ends,
// reconnecting when the connection fails. It closes the connection it
// holds when it returns.
func (d *Driver) listenLoop(ctx context.Context, conn *pgx.Conn, fn func(driver.Notification)) {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err == nil {
			if ctx.Err() == nil {
				fn(driver.Notification{Queue: n.Payload, Committed: true})
			}
			continue
		}
		closeConn(conn)
		if conn = d.reconnect(ctx); conn == nil {
			return
		}
	}
}

// reconnect opens a listening connection, waiting longer after each failed
// attempt, until it succeeds or ctx ends (then it returns nil).
func (d *Driver) reconnect(ctx context.Context) *pgx.Conn {
	delay := reconnectMin
	for {
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		}
		conn, err := d.listenConn(ctx)
		if err == nil {
			return conn
		}
		delay = min(2*delay, reconnectMax)
	}
}

// closeConn closes conn, waiting at most a second for the server.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// laterNotifier sends the notifications of inserts that committed on the
// pool, after their commit and off their callers' path.
type laterNotifier struct {
	mu      sync.Mutex
	pending map[string]bool
	sending bool
}

// notifyLaterSQL is notifySQL in a transaction that commits asynchronously.
const notifyLaterSQL = `SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, q)
FROM unnest($2::text[]) AS q`

// notifyLaterTimeout bounds one NOTIFY sent after an insert.
const notifyLaterTimeout = 10 * time.Second

// notifyLater has queues notified soon, in a transaction of its own, and
// returns at once.
//
// An insert on the pool that notified in its own transaction would hold,
// from its commit until the commit's WAL flush, the one lock every
// notifying transaction of the server queues for, so that concurrent
// enqueues could not share a flush, and each would wait for it. Sent after
// the commit, the notification still reaches listeners only for jobs that
// exist. Notifications that pile up while one is being sent go together in
// the next, once per queue. If the process dies in between, listeners miss
// the hint and find the jobs by polling. Inserts in a caller's transaction
// still notify in it, since only the caller knows when it commits.
func (d *Driver) notifyLater(queues []string) {
	n := &d.later
	n.mu.Lock()
	if n.pending == nil {
		n.pending = make(map[string]bool)
	}
	for _, q := range queues {
		n.pending[q] = true
	}
	if n.sending {
		n.mu.Unlock()
		return
	}
	n.sending = true
	n.mu.Unlock()
	go func() {
		for {
			n.mu.Lock()
			if len(n.pending) == 0 {
				n.sending = false
				n.mu.Unlock()
				return
			}
			queues := make([]string, 0, len(n.pending))
			for q := range n.pending {
				queues = append(queues, q)
			}
			clear(n.pending)
			n.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), notifyLaterTimeout)
			// A hint, so polling covers a loss, and nothing to flush: the
			// transaction commits without waiting for its WAL record.
			_, _ = d.pool.Exec(ctx, notifyLaterSQL, d.q.channel, queues)
			cancel()
		}
	}()
}
