package sluice

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// WebhookTopic is the topic of the jobs that deliver webhook
// notifications (see Webhook).
const WebhookTopic = "sluice.webhook"

// Defaults of Webhook.
const (
	// DefaultWebhookRetries is how many times a delivery is retried.
	DefaultWebhookRetries = 10
	// DefaultWebhookTimeout bounds one delivery.
	DefaultWebhookTimeout = 10 * time.Second
)

// Webhook is an HTTP endpoint notified of jobs' final outcomes: completed,
// failed for good, or cancelled by their workers.
//
// Each notification is a job of its own (topic WebhookTopic), inserted in
// the same transaction as the outcome it tells of, by the same statement
// that writes the outcome (or by Ack or Nack in the worker's transaction).
// So a crash loses a notification only together with its outcome, and a
// job whose outcome is recorded is notified. A started client that has
// the same Webhooks and works the notification's queue delivers it: a
// POST of a JSON body (see WebhookBody) signed with Secret (see
// VerifyWebhook), retried with backoff until the endpoint answers 2xx.
// Delivery is at least once: receivers drop repeats by the Sluice-Delivery
// header (the body's id). Give every client of the queue the same
// Webhooks; a client without the endpoint a notification names fails its
// attempt.
//
// Notification jobs are never notified of themselves. Jobs ended by an
// operator's Cancel, or failed by the rescuer after their last attempt's
// client vanished, are not notified.
type Webhook struct {
	// URL is the endpoint: an http or https URL. Required.
	URL string
	// Secret is the key of the HMAC-SHA256 signature of each delivery.
	// Required.
	Secret []byte
	// Name names the endpoint in its notification jobs. Default: a hash of
	// the URL, so that neither the URL nor the Secret is ever stored.
	Name string
	// Events are the outcomes notified, of EventCompleted, EventFailed and
	// EventCancelled. Default all three.
	Events []EventKind
	// Topics, when not empty, notifies jobs of these topics only.
	Topics []string
	// Queue is the queue of the notification jobs; it must be one of
	// Config.Queues. Default QueueDefault.
	Queue string
	// MaxRetries is how many times a failed delivery is retried. Default
	// DefaultWebhookRetries; NoRetries means none.
	MaxRetries int
	// RetryPolicy spaces the retries. Default: exponential from 5 s,
	// doubling up to an hour, with jitter.
	RetryPolicy RetryPolicy
	// Timeout bounds one delivery. Default DefaultWebhookTimeout.
	Timeout time.Duration
	// Client sends the deliveries. Default a client of its own with no
	// timeout but Timeout.
	Client *http.Client
}

// WebhookBody is the JSON body of a webhook delivery.
type WebhookBody struct {
	// ID identifies the notification, the same in every delivery of it
	// (the Sluice-Delivery header): receivers drop repeats by it.
	ID string `json:"id"`
	// Event is "job.completed", "job.failed" or "job.cancelled".
	Event string `json:"event"`
	// At is when the outcome was recorded.
	At time.Time `json:"at"`
	// Job describes the job as its outcome left it.
	Job WebhookJob `json:"job"`
}

// WebhookJob describes a job in a WebhookBody: its row without the
// arguments, logs and full error history.
type WebhookJob struct {
	// ID, Topic, Queue, Status, Attempt, MaxRetries, Tags, Metadata,
	// CreatedAt, AttemptedAt and FinalizedAt are the job's, as in JobRow.
	ID          string          `json:"id"`
	Topic       string          `json:"topic"`
	Queue       string          `json:"queue"`
	Status      JobStatus       `json:"status"`
	Attempt     int             `json:"attempt"`
	MaxRetries  int             `json:"max_retries"`
	Tags        []string        `json:"tags,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
	AttemptedAt time.Time       `json:"attempted_at,omitzero"`
	FinalizedAt time.Time       `json:"finalized_at"`
	// Result is the job's result, when it has one of at most 64 KiB.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the last attempt's error, for a failed or cancelled job.
	Error string `json:"error,omitempty"`
}

// maxWebhookResult is the largest result a notification carries.
const maxWebhookResult = 64 << 10

// webhookArgs are the arguments of a notification job.
type webhookArgs struct {
	Endpoint string     `json:"endpoint"`
	Event    string     `json:"event"`
	At       time.Time  `json:"at"`
	Job      WebhookJob `json:"job"`
}

// Topic implements JobArgs.
func (webhookArgs) Topic() string { return WebhookTopic }

// fillWebhooks checks cfg.Webhooks, fills in their defaults, and gives the
// client the worker that delivers them.
func (cfg *Config) fillWebhooks() error {
	if len(cfg.Webhooks) == 0 {
		return nil
	}
	hooks := slices.Clone(cfg.Webhooks)
	names := map[string]bool{}
	for i := range hooks {
		if err := hooks[i].fill(cfg, fmt.Sprintf("Webhooks[%d]", i)); err != nil {
			return err
		}
		if names[hooks[i].Name] {
			return &ConfigError{Field: fmt.Sprintf("Webhooks[%d].Name", i), Reason: "names two webhooks"}
		}
		names[hooks[i].Name] = true
	}
	cfg.Webhooks = hooks
	return AddWorkerSafely(cfg.Workers, &webhookWorker{cfg: cfg})
}

// fill checks w and fills in its defaults; field names it in errors.
func (w *Webhook) fill(cfg *Config, field string) error {
	u, err := url.Parse(w.URL)
	switch {
	case err != nil:
		return &ConfigError{Field: field + ".URL", Reason: err.Error()}
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return &ConfigError{Field: field + ".URL", Reason: "must be an http or https URL with a host"}
	case len(w.Secret) == 0:
		return &ConfigError{Field: field + ".Secret", Reason: "must not be empty"}
	case w.MaxRetries < NoRetries:
		return &ConfigError{Field: field + ".MaxRetries", Reason: "must be >= 0, or NoRetries"}
	case w.Timeout < 0:
		return &ConfigError{Field: field + ".Timeout", Reason: "must not be negative"}
	}
	for _, ev := range w.Events {
		if ev != EventCompleted && ev != EventFailed && ev != EventCancelled {
			return &ConfigError{Field: field + ".Events", Reason: fmt.Sprintf("%q is not completed, failed or cancelled", ev)}
		}
	}
	if w.Name == "" {
		sum := sha256.Sum256([]byte(w.URL))
		w.Name = "url-" + hex.EncodeToString(sum[:8])
	}
	if err := driver.CheckText(w.Name); err != nil {
		return &ConfigError{Field: field + ".Name", Reason: err.Error()}
	}
	w.Queue = orDefault(w.Queue, QueueDefault)
	if _, ok := cfg.Queues[w.Queue]; !ok {
		return &ConfigError{Field: field + ".Queue", Reason: fmt.Sprintf("%q is not in Queues", w.Queue)}
	}
	if len(w.Events) == 0 {
		w.Events = []EventKind{EventCompleted, EventFailed, EventCancelled}
	}
	w.MaxRetries = retries(orDefault(w.MaxRetries, DefaultWebhookRetries))
	if w.RetryPolicy == nil {
		w.RetryPolicy = ExponentialRetryPolicy{Initial: 5 * time.Second, Max: time.Hour}
	}
	w.Timeout = orDefault(w.Timeout, DefaultWebhookTimeout)
	if w.Client == nil {
		w.Client = &http.Client{}
	}
	return nil
}

// webhook returns the client's webhook named name, or nil.
func (cfg *Config) webhook(name string) *Webhook {
	for i := range cfg.Webhooks {
		if cfg.Webhooks[i].Name == name {
			return &cfg.Webhooks[i]
		}
	}
	return nil
}

// notifications returns the jobs that notify the webhooks of the final
// outcome fin of jr's claim, to insert with it; nil when none wants it.
func (r *run) notifications(jr *jobRun, fin *driver.JobFinalize) []*driver.JobInsert {
	row := jr.row
	if len(r.cfg.Webhooks) == 0 || !fin.Status.Finished() || row.Topic == WebhookTopic {
		return nil
	}
	ev := outcomeEvent(fin.Status, false)
	var out []*driver.JobInsert
	for i := range r.cfg.Webhooks {
		w := &r.cfg.Webhooks[i]
		if !slices.Contains(w.Events, ev) || len(w.Topics) > 0 && !slices.Contains(w.Topics, row.Topic) {
			continue
		}
		args := webhookArgs{Endpoint: w.Name, Event: "job." + string(ev), At: fin.FinalizedAt, Job: describe(row, fin)}
		payload, err := json.Marshal(args)
		if err == nil {
			err = driver.CheckJSON(payload)
		}
		if err != nil {
			r.cfg.Logger.Error("sluice: cannot encode a webhook notification", "job_id", row.ID, "error", err)
			continue
		}
		out = append(out, &driver.JobInsert{ID: r.cfg.NewJobID(), Topic: WebhookTopic, Queue: w.Queue,
			Payload: payload, MaxRetries: w.MaxRetries, RunAt: fin.FinalizedAt, CreatedAt: fin.FinalizedAt})
	}
	return out
}

// describe returns the job of row as the outcome fin leaves it.
func describe(row *JobRow, fin *driver.JobFinalize) WebhookJob {
	j := WebhookJob{ID: row.ID, Topic: row.Topic, Queue: row.Queue, Status: fin.Status, Attempt: row.Attempt,
		MaxRetries: row.MaxRetries, Tags: row.Tags, Metadata: row.Metadata, CreatedAt: row.CreatedAt,
		AttemptedAt: row.AttemptedAt, FinalizedAt: fin.FinalizedAt}
	result := fin.Result
	if result == nil {
		result = row.Result
	}
	if len(result) <= maxWebhookResult {
		j.Result = result
	}
	if fin.Error != nil {
		j.Error = fin.Error.Error
	}
	return j
}

// webhookWorker delivers notification jobs to the client's webhooks.
type webhookWorker struct {
	WorkerDefaults[webhookArgs]
	cfg *Config
}

// Work POSTs the notification to its endpoint, signed, and fails unless
// the endpoint answers 2xx.
func (w *webhookWorker) Work(ctx context.Context, job *Job[webhookArgs]) error {
	hook := w.cfg.webhook(job.Args.Endpoint)
	if hook == nil {
		return fmt.Errorf("sluice: no webhook named %q in this client's Config.Webhooks", job.Args.Endpoint)
	}
	body, err := json.Marshal(WebhookBody{ID: job.ID, Event: job.Args.Event, At: job.Args.At, Job: job.Args.Job})
	if err != nil {
		return Cancel(err)
	}
	ctx, cancel := context.WithTimeout(ctx, hook.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL, bytes.NewReader(body))
	if err != nil {
		return Cancel(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sluice-webhook")
	req.Header.Set("Sluice-Delivery", job.ID)
	req.Header.Set("Sluice-Event", job.Args.Event)
	req.Header.Set("Sluice-Signature", SignWebhook(hook.Secret, w.cfg.now(), body))
	resp, err := hook.Client.Do(req)
	if err != nil {
		return fmt.Errorf("deliver to webhook %s: %w", hook.Name, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("deliver to webhook %s: answered %s", hook.Name, resp.Status)
	}
	return nil
}

// Timeout gives a delivery its endpoint's Timeout and a little more.
func (w *webhookWorker) Timeout(job *Job[webhookArgs]) time.Duration {
	if hook := w.cfg.webhook(job.Args.Endpoint); hook != nil {
		return hook.Timeout + 5*time.Second
	}
	return 0
}

// RetryPolicy retries each delivery per its endpoint's RetryPolicy.
func (w *webhookWorker) RetryPolicy() RetryPolicy { return webhookRetry{w.cfg} }

// webhookRetry is the retry policy of notification jobs.
type webhookRetry struct{ cfg *Config }

// NextRetry implements RetryPolicy.
func (p webhookRetry) NextRetry(job *JobRow, failedAt time.Time) time.Time {
	var args webhookArgs
	if json.Unmarshal(job.Payload, &args) == nil {
		if hook := p.cfg.webhook(args.Endpoint); hook != nil {
			return hook.RetryPolicy.NextRetry(job, failedAt)
		}
	}
	return p.cfg.RetryPolicy.NextRetry(job, failedAt)
}

// SignWebhook returns the Sluice-Signature header of a delivery of body
// signed with secret at time at: "t=<unix seconds>,v1=<hex>", where the
// hex is the HMAC-SHA256, keyed with secret, of the seconds, a dot, and
// the body.
func SignWebhook(secret []byte, at time.Time, body []byte) string {
	t := strconv.FormatInt(at.Unix(), 10)
	return "t=" + t + ",v1=" + hex.EncodeToString(webhookMAC(secret, t, body))
}

func webhookMAC(secret []byte, t string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(t))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// VerifyWebhook checks the Sluice-Signature header signature of a delivery
// of body, for a receiver that shares secret: the HMAC must match, and the
// time signed must be within tolerance of now, which stops a delivery
// recorded by a third party from being replayed later. It returns nil or
// an error matching ErrWebhookSignature.
func VerifyWebhook(secret []byte, signature string, body []byte, now time.Time, tolerance time.Duration) error {
	var t, v1 string
	for part := range strings.SplitSeq(signature, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			t = v
		case "v1":
			v1 = v
		}
	}
	sec, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v1 == "" {
		return fmt.Errorf("%w: malformed", ErrWebhookSignature)
	}
	got, err := hex.DecodeString(v1)
	if err != nil || !hmac.Equal(got, webhookMAC(secret, t, body)) {
		return fmt.Errorf("%w: does not match", ErrWebhookSignature)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: signed %s from now, beyond the tolerance of %s", ErrWebhookSignature, d.Round(time.Second), tolerance)
	}
	return nil
}
