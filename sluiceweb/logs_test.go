package sluiceweb_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// logEventJSON is the data of an event named log.
type logEventJSON struct {
	JobID   string `json:"job_id"`
	Attempt int    `json:"attempt"`
	Record  struct {
		Level   string          `json:"level"`
		Time    time.Time       `json:"time"`
		Message string          `json:"message"`
		Attrs   json.RawMessage `json:"attrs"`
	} `json:"record"`
}

// nextLog returns the next log event, skipping others, and requires it to
// have no id.
func (s *eventStream) nextLog() logEventJSON {
	s.t.Helper()
	for {
		if ev := s.next(); ev.name == "log" {
			require.Empty(s.t, ev.id, "a log event has no id")
			var l logEventJSON
			require.NoError(s.t, json.Unmarshal([]byte(ev.data), &l))
			return l
		}
	}
}

// TestEventsSendTheServingClientsLogs: records the serving client's
// workers log are sent at once, as log events, to the streams whose ids
// or topics select their job, before the client stores them.
func TestEventsSendTheServingClientsLogs(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		begin, release := make(chan struct{}), make(chan struct{})
		cfg := handlerConfig()
		cfg.Workers = mailWorkers(func(ctx context.Context, job *sluice.Job[mailArgs]) error {
			<-begin
			sluice.Logger(ctx).Info("sending", "to", job.Args.To)
			<-release
			sluice.Logger(ctx).Warn("sent")
			return nil
		})
		cfg.ProgressInterval = time.Hour // stored only with the outcome
		e := newEnvWith(t, db, cfg, nil)
		require.NoError(t, e.client.Start(t.Context()))
		t.Cleanup(func() { require.NoError(t, e.client.Stop(context.Background())) })
		id := e.enqueue(&sluice.EnqueueOptions{})
		all := e.events("api/events", "")
		byID := e.events("api/events?ids="+id, "")
		byTopic := e.events("api/events?topics=mail", "")
		elsewhere := e.events("api/events?topics=sms&ids="+id, "")
		close(begin)

		for _, s := range []*eventStream{all, byID, byTopic} {
			l := s.nextLog()
			require.Equal(t, id, l.JobID)
			require.Equal(t, 1, l.Attempt)
			require.Equal(t, "INFO", l.Record.Level)
			require.Equal(t, "sending", l.Record.Message)
			require.JSONEq(t, `{"to": "a@example.com"}`, string(l.Record.Attrs))
			require.WithinDuration(t, time.Now(), l.Record.Time, time.Minute)
		}
		var job jobJSON
		e.do("GET", "api/jobs/"+id, "").json(t, http.StatusOK, &job)
		require.Equal(t, "processing", job.Status)
		require.Empty(t, job.Logs, "sent before it was stored")

		close(release)
		sent := all.nextLog()
		require.Equal(t, "WARN", sent.Record.Level)
		require.JSONEq(t, `{}`, string(sent.Record.Attrs))
		_, ch := all.nextJob(id)
		for ch.Kind != "completed" {
			_, ch = all.nextJob(id)
		}
		require.Equal(t, 2, ch.Job.Logged, "the records, stored with the outcome")
		// The stream whose topics select another job got none of them.
		for {
			select {
			case ev := <-elsewhere.events:
				require.NotEqual(t, "log", ev.name, "a record of a job the stream does not select")
				continue
			default:
			}
			break
		}
	})
}
