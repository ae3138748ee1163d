package sluiceweb

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
)

// LimitsResponse is the stored limits of one scope (a queue or a topic)
// as the API answers them (GET api/limits, PUT api/limits/...), and as
// `sluice queue keys --json` and `sluice topic limit --json` print them.
// Periods are Go durations ("1m", "1h30m").
type LimitsResponse struct {
	// Kind is "queue" or "topic", Name the queue's or the topic's name.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// MaxRunning, RateLimit and RatePeriod are a topic's own limits,
	// those of all its jobs (sluice.TopicLimits); a queue's own are its
	// state (api/queues).
	MaxRunning int    `json:"max_running,omitempty"`
	RateLimit  int    `json:"rate_limit,omitempty"`
	RatePeriod string `json:"rate_period,omitempty"`
	// KeyLimits are the limits of each key of the scope.
	KeyLimits KeyLimitsJSON `json:"key_limits"`
	// UpdatedAt is when the limits last changed.
	UpdatedAt time.Time `json:"updated_at"`
}

// KeyLimitsJSON are sluice.KeyLimits as the API reads and writes them: the
// body of PUT api/limits/{kind}/{name}/keys, and LimitsResponse.KeyLimits.
type KeyLimitsJSON struct {
	// MaxRunning, RateLimit and RatePeriod are each key's defaults.
	MaxRunning int    `json:"max_running,omitempty"`
	RateLimit  int    `json:"rate_limit,omitempty"`
	RatePeriod string `json:"rate_period,omitempty"`
	// Sequence is "hold", "continue" or empty (see sluice.KeyLimits).
	Sequence string `json:"sequence,omitempty"`
	// Fair shares a queue's claims between its keys.
	Fair bool `json:"fair,omitempty"`
	// Keys are the keys whose limits or weight differ from the defaults,
	// sorted by key.
	Keys []KeyLimitJSON `json:"keys,omitempty"`
}

// KeyLimitJSON is one key's limits (sluice.KeyLimit), in place of the
// defaults of its scope.
type KeyLimitJSON struct {
	Key        string `json:"key"`
	MaxRunning int    `json:"max_running,omitempty"`
	RateLimit  int    `json:"rate_limit,omitempty"`
	RatePeriod string `json:"rate_period,omitempty"`
	Weight     int    `json:"weight,omitempty"`
}

// NewLimitsResponse returns l as the API answers it.
func NewLimitsResponse(l *sluice.Limits) LimitsResponse {
	res := LimitsResponse{Kind: string(l.Scope.Kind), Name: l.Scope.Name, MaxRunning: l.MaxRunning,
		RateLimit: l.RateLimit, RatePeriod: DurationText(l.RatePeriod), UpdatedAt: l.UpdatedAt,
		KeyLimits: KeyLimitsJSON{MaxRunning: l.KeyMaxRunning, RateLimit: l.KeyRateLimit,
			RatePeriod: DurationText(l.KeyRatePeriod), Sequence: string(l.Sequence), Fair: l.Fair}}
	for _, k := range l.Keys {
		res.KeyLimits.Keys = append(res.KeyLimits.Keys, KeyLimitJSON{Key: k.Key, MaxRunning: k.MaxRunning,
			RateLimit: k.RateLimit, RatePeriod: DurationText(k.RatePeriod), Weight: k.Weight})
	}
	return res
}

// DurationText returns d in Go's syntax without its zero tails ("1m", not
// "1m0s"; "1h", not "1h0m0s"), empty for 0.
func DurationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// keyLimitsRequest is the body of PUT api/limits/{kind}/{name}/keys.
type keyLimitsRequest struct {
	MaxRunning int    `json:"max_running"`
	RateLimit  int    `json:"rate_limit"`
	RatePeriod string `json:"rate_period"`
	Sequence   string `json:"sequence"`
	Fair       bool   `json:"fair"`
	// Keys are decoded one by one (keyLimitRequest), so that each is held
	// to the exact names of its members.
	Keys []json.RawMessage `json:"keys"`
}

// keyLimitRequest is one member of keyLimitsRequest.Keys.
type keyLimitRequest struct {
	Key        *string `json:"key"`
	MaxRunning int     `json:"max_running"`
	RateLimit  int     `json:"rate_limit"`
	RatePeriod string  `json:"rate_period"`
	Weight     int     `json:"weight"`
}

// keyLimits returns the request's limits, and its keys in the order given,
// or a problem.
func (req *keyLimitsRequest) keyLimits() (sluice.KeyLimits, []string, error) {
	l := sluice.KeyLimits{MaxRunning: req.MaxRunning, RateLimit: req.RateLimit, Sequence: sluice.SequencePolicy(req.Sequence), Fair: req.Fair}
	var err error
	if l.RatePeriod, err = period("rate_period", req.RatePeriod); err != nil {
		return l, nil, err
	}
	order := make([]string, 0, len(req.Keys))
	for i, raw := range req.Keys {
		field := fmt.Sprintf("keys[%d]", i)
		var k keyLimitRequest
		if err := decodeObject(field, raw, &k); err != nil {
			return l, nil, err
		}
		if k.Key == nil {
			return l, nil, badRequest(CodeInvalidRequest, field+".key", "required")
		}
		if _, dup := l.Keys[*k.Key]; dup {
			return l, nil, badRequest(CodeInvalidRequest, field+".key", fmt.Sprintf("%q is given twice", *k.Key))
		}
		kl := sluice.KeyLimit{MaxRunning: k.MaxRunning, RateLimit: k.RateLimit, Weight: k.Weight}
		if kl.RatePeriod, err = period(field+".rate_period", k.RatePeriod); err != nil {
			return l, nil, err
		}
		if l.Keys == nil {
			l.Keys = make(map[string]sluice.KeyLimit, len(req.Keys))
		}
		l.Keys[*k.Key] = kl
		order = append(order, *k.Key)
	}
	return l, order, nil
}

// period parses a rate's period, a Go duration; empty is none.
func period(field, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	return parseDuration(CodeInvalidRequest, field, v)
}

// topicLimitsRequest is the body of PUT api/limits/topic/{name}.
type topicLimitsRequest struct {
	MaxRunning int    `json:"max_running"`
	RateLimit  int    `json:"rate_limit"`
	RatePeriod string `json:"rate_period"`
}

// limits serves GET api/limits: the stored limits of every scope that
// has any, queues first, then topics, each by name.
func (h *Handler) limits(w http.ResponseWriter, r *http.Request) {
	if !h.readAll(w, r, "limits") {
		return
	}
	all, err := h.c.StoredLimits(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	res := itemsResponse[LimitsResponse]{Items: make([]LimitsResponse, len(all))}
	for i, l := range all {
		res.Items[i] = NewLimitsResponse(l)
	}
	writeJSON(w, http.StatusOK, res)
}

// limitsAction returns the action of a change to the limits of scope,
// named name: a topic's concern its topic, a queue's every topic (as a
// pause does).
func limitsAction(name string, scope sluice.Scope, body []byte) Action {
	a := Action{Kind: ActionManage, Name: name, Body: body}
	if scope.Kind == sluice.ScopeTopic {
		a.Topics = []string{scope.Name}
	} else {
		a.AllTopics, a.Queue = true, scope.Name
	}
	return a
}

// setKeyLimits serves PUT api/limits/{kind}/{name}/keys: the limits of
// each key of a queue or a topic, replaced by the body's, for every
// client on the database.
func (h *Handler) setKeyLimits(w http.ResponseWriter, r *http.Request) {
	var scope sluice.Scope
	switch kind, name := r.PathValue("kind"), r.PathValue("name"); kind {
	case string(sluice.ScopeQueue):
		scope = sluice.QueueScope(name)
	case string(sluice.ScopeTopic):
		scope = sluice.TopicScope(name)
	default:
		h.fail(w, r, badRequest(CodeInvalidRequest, "kind", fmt.Sprintf("%q is neither queue nor topic", kind)))
		return
	}
	var req keyLimitsRequest
	body, err := h.decodeBody(w, r, &req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	l, order, err := req.keyLimits()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !h.authorize(w, r, limitsAction("set_key_limits", scope, body)) {
		return
	}
	stored, err := h.c.SetKeyLimits(r.Context(), scope, l)
	if err != nil {
		h.fail(w, r, keyField(err, order))
		return
	}
	writeJSON(w, http.StatusOK, NewLimitsResponse(stored))
}

// keyField returns err, an error of SetKeyLimits, with the field of an
// *sluice.OptionsError about one key (Keys["acme"].RateLimit) named as
// the body has it (keys[2].rate_limit), order being the body's keys.
func keyField(err error, order []string) error {
	var oe *sluice.OptionsError
	if !errors.As(err, &oe) {
		return err
	}
	for i, k := range order {
		rest, ok := strings.CutPrefix(oe.Field, fmt.Sprintf("Keys[%q]", k))
		if !ok {
			continue
		}
		if rest == "" {
			rest = ".Key"
		}
		return badRequest(CodeInvalidRequest, fmt.Sprintf("keys[%d]%s", i, snakeCase(rest)), oe.Reason)
	}
	return err
}

// setTopicLimits serves PUT api/limits/topic/{name}: the limits of all
// the jobs of a topic, replaced by the body's, for every client on the
// database.
func (h *Handler) setTopicLimits(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("name")
	var req topicLimitsRequest
	body, err := h.decodeBody(w, r, &req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	l := sluice.TopicLimits{MaxRunning: req.MaxRunning, RateLimit: req.RateLimit}
	if l.RatePeriod, err = period("rate_period", req.RatePeriod); err != nil {
		h.fail(w, r, err)
		return
	}
	if !h.authorize(w, r, limitsAction("set_topic_limits", sluice.TopicScope(topic), body)) {
		return
	}
	stored, err := h.c.SetTopicLimits(r.Context(), topic, l)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, NewLimitsResponse(stored))
}

// keyCounts serves GET api/queues/{name}/keys: the keys of the queue's
// pending and processing jobs, with how many of each, most first.
func (h *Handler) keyCounts(w http.ResponseWriter, r *http.Request) {
	queue := r.PathValue("name")
	q, err := newQuery(r, "limit")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	limit, err := q.int("limit", 0)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !h.authorize(w, r, Action{Kind: ActionRead, Name: "key_counts", AllTopics: true, Queue: queue}) {
		return
	}
	counts, err := h.c.KeyCounts(r.Context(), queue, limit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if counts == nil {
		counts = []*sluice.KeyCount{}
	}
	writeJSON(w, http.StatusOK, itemsResponse[*sluice.KeyCount]{Items: counts})
}
