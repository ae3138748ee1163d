package sluice

import (
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// LogRecord is one record a worker logged through Logger, as its job
// keeps it (JobRow.Logs): the attempt, level, time, message and
// attributes (a JSON object).
type LogRecord = driver.LogRecord

// Defaults and bounds of a job's logs (see JobLogConfig).
const (
	// DefaultJobLogRecords is how many records a job keeps by default.
	DefaultJobLogRecords = 100
	// DefaultJobLogBytes is how many bytes of messages and attributes a
	// job keeps by default.
	DefaultJobLogBytes = 32 << 10
	// MaxLogMessageBytes is the longest message a job keeps; longer ones
	// are cut.
	MaxLogMessageBytes = 1 << 10
	// MaxLogAttrsBytes is the largest attributes a record keeps, as
	// encoded JSON; larger ones are replaced by a note of their size.
	MaxLogAttrsBytes = 4 << 10
)

// JobLogConfig bounds what Logger keeps with each job.
type JobLogConfig struct {
	// MaxRecords is how many records a job keeps, the newest, across its
	// attempts; older ones are dropped and counted in JobRow.LogsDropped.
	// Default DefaultJobLogRecords; negative keeps none (records still go
	// to Config.Logger).
	MaxRecords int
	// MaxBytes bounds the bytes of the kept records' messages and
	// attributes, the newest kept. Default DefaultJobLogBytes.
	MaxBytes int
	// Level is the least severe level kept with jobs. Default
	// slog.LevelInfo.
	Level slog.Leveler
}

// fill fills in c's defaults.
func (c *JobLogConfig) fill() error {
	if c.MaxBytes < 0 {
		return &ConfigError{Field: "JobLogs.MaxBytes", Reason: "must not be negative"}
	}
	c.MaxRecords = orDefault(c.MaxRecords, DefaultJobLogRecords)
	c.MaxBytes = orDefault(c.MaxBytes, DefaultJobLogBytes)
	if c.Level == nil {
		c.Level = slog.LevelInfo
	}
	return nil
}

// loggerKey is the context key under which the contexts a started client
// hands out carry its Config.Logger.
type loggerKey struct{}

// Logger returns a logger for the job whose context ctx is: its records
// are kept with the job (JobRow.Logs, within Config.JobLogs' bounds,
// newest kept), written by the client at most once per
// Config.ProgressInterval together with progress and with the job's
// outcome, and sent as EventLogged at once; they also go to
// Config.Logger, with the job's ID, topic and attempt as attributes.
// Messages and attributes are cleaned by the text rule (see package
// driver), never refused. Logging costs a store in memory: no record
// waits for the database.
//
// Outside a job's context, Logger returns a logger that writes only to
// Config.Logger: that of the client whose context ctx is (hooks and
// handlers are given such contexts), else slog.Default().
func Logger(ctx context.Context) *slog.Logger {
	jr, _ := ctx.Value(jobRunKey{}).(*jobRun)
	if jr == nil {
		if l, _ := ctx.Value(loggerKey{}).(*slog.Logger); l != nil {
			return l
		}
		return slog.Default()
	}
	return jr.logger()
}

// logger returns the job's logger, made on first use.
func (jr *jobRun) logger() *slog.Logger {
	if l := jr.log.Load(); l != nil {
		return l.logger
	}
	cfg := jr.run.cfg
	l := &jobLog{}
	l.handler = jobHandler{jr: jr, log: l, base: cfg.Logger.Handler(), keep: cfg.JobLogs.Level}
	l.logger = slog.New(&l.handler)
	if cfg.JobLogs.MaxRecords > 0 {
		l.records = slices.Clone(jr.row.Logs)
		l.dropped = jr.row.LogsDropped
		for _, r := range l.records {
			l.bytes += recordBytes(&r)
		}
	}
	if !jr.log.CompareAndSwap(nil, l) {
		return jr.log.Load().logger
	}
	return l.logger
}

// jobLog is what a job's logger keeps: the job's records, oldest first,
// within the bounds, and which of their versions was last written.
type jobLog struct {
	logger *slog.Logger
	// handler is logger's, allocated with the rest.
	handler jobHandler

	mu      sync.Mutex
	records []LogRecord
	bytes   int
	dropped int
	// seq counts the records added; written is the seq last written.
	seq, written uint64
}

// add keeps rec, dropping the oldest records beyond the bounds.
func (l *jobLog) add(rec LogRecord, bounds *JobLogConfig) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, rec)
	l.bytes += recordBytes(&rec)
	l.seq++
	drop := 0
	for len(l.records)-drop > bounds.MaxRecords || l.bytes > bounds.MaxBytes && drop < len(l.records) {
		l.bytes -= recordBytes(&l.records[drop])
		drop++
	}
	if drop > 0 {
		l.records = slices.Delete(l.records, 0, drop)
		l.dropped += drop
	}
}

// unwritten returns the logs to write, whole, and their seq; nil when
// nothing was added since the last write.
func (l *jobLog) unwritten() (*driver.JobLogs, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seq == l.written {
		return nil, 0
	}
	return &driver.JobLogs{Records: slices.Clone(l.records), Dropped: l.dropped}, l.seq
}

// wrote records that the logs of seq were written.
func (l *jobLog) wrote(seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.written = max(l.written, seq)
}

// unwrittenLogs returns jr's logs if some were added since they were last
// written, with their seq.
func (jr *jobRun) unwrittenLogs() (*driver.JobLogs, uint64) {
	if l := jr.log.Load(); l != nil {
		return l.unwritten()
	}
	return nil, 0
}

// recordBytes is what a record counts against JobLogConfig.MaxBytes.
func recordBytes(r *LogRecord) int { return len(r.Message) + len(r.Attrs) }

// jobHandler is the slog.Handler of a job's logger: it keeps records with
// the job and passes them on to the client's logger.
type jobHandler struct {
	jr  *jobRun
	log *jobLog
	// base is the client logger's handler. Records go to it with the
	// job's attributes first (jobAttrs); with frames, through inner.
	base slog.Handler
	keep slog.Leveler
	// frames are the groups and attributes added with WithGroup and
	// WithAttrs, in order; inner, set with them, makes base with the job's
	// attributes and the frames once, when a record first needs it.
	frames []logFrame
	inner  *lazyHandler
}

// lazyHandler is a handler made on first use.
type lazyHandler struct {
	once sync.Once
	h    slog.Handler
}

// jobAttrs are the attributes the client logger's records of a job carry
// first; an array, which costs no allocation where it does not escape.
func (h *jobHandler) jobAttrs() [3]slog.Attr {
	row := h.jr.row
	return [3]slog.Attr{slog.String("job_id", row.ID), slog.String("topic", row.Topic), slog.Int("attempt", row.Attempt)}
}

// handler returns the handler records go to with their attributes alone:
// base with the job's attributes and the frames, made on first use. Only
// for a handler with frames.
func (h *jobHandler) handler() slog.Handler {
	h.inner.once.Do(func() {
		attrs := h.jobAttrs()
		inner := h.base.WithAttrs(attrs[:])
		for _, f := range h.frames {
			if f.group != "" {
				inner = inner.WithGroup(f.group)
			} else {
				inner = inner.WithAttrs(f.attrs)
			}
		}
		h.inner.h = inner
	})
	return h.inner.h
}

// logFrame is one WithGroup (group set) or WithAttrs (attrs set) call.
type logFrame struct {
	group string
	attrs []slog.Attr
}

// Enabled implements slog.Handler.
func (h *jobHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.keeps(level) || h.base.Enabled(ctx, level)
}

func (h *jobHandler) keeps(level slog.Level) bool {
	return level >= h.keep.Level() && h.jr.run.cfg.JobLogs.MaxRecords > 0
}

// Handle implements slog.Handler.
func (h *jobHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.keeps(r.Level) {
		jr := h.jr
		rec := LogRecord{Attempt: jr.row.Attempt, Level: r.Level, Time: jr.run.cfg.now(),
			Message: driver.CleanText(r.Message, MaxLogMessageBytes), Attrs: h.attrs(r)}
		h.log.add(rec, &jr.run.cfg.JobLogs)
		jr.run.events.emitLog(jr.row, &rec, rec.Time.Sub(jr.row.AttemptedAt))
	}
	switch {
	case !h.base.Enabled(ctx, r.Level):
		return nil
	case len(h.frames) > 0:
		return h.handler().Handle(ctx, r)
	}
	// The job's attributes go first in the record itself, as a handler
	// made with them would write them: that costs less than making one,
	// which a job logging once would pay in full.
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	attrs := h.jobAttrs()
	out.AddAttrs(attrs[:]...)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(a)
		return true
	})
	return h.base.Handle(ctx, out)
}

// WithAttrs implements slog.Handler.
func (h *jobHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.frames = append(slices.Clip(h.frames), logFrame{attrs: attrs})
	c.inner = &lazyHandler{}
	return &c
}

// WithGroup implements slog.Handler.
func (h *jobHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.frames = append(slices.Clip(h.frames), logFrame{group: name})
	c.inner = &lazyHandler{}
	return &c
}

// attrs returns the attributes of r, with those of the handler's frames,
// as a JSON object; nil when there are none.
func (h *jobHandler) attrs(r slog.Record) json.RawMessage {
	if len(h.frames) == 0 && r.NumAttrs() == 0 {
		return nil
	}
	var b []byte
	ok := false
	if len(h.frames) == 0 {
		b, ok = flatAttrs(r)
	}
	if !ok {
		b = h.nestedAttrs(r)
	}
	switch {
	case len(b) > MaxLogAttrsBytes:
		b = fmt.Appendf(nil, `{"!attrs":"%d bytes, more than %d: not kept"}`, len(b), MaxLogAttrsBytes)
	case string(b) == "{}":
		return nil
	}
	return b
}

// maxFlatAttrs is the most attributes flatAttrs encodes.
const maxFlatAttrs = 8

// flatAttrs encodes the attributes of r, when there are at most
// maxFlatAttrs, each a string, number, bool, duration or time under a
// key of its own, without encoding/json's reflection: the same bytes
// nestedAttrs writes for them. ok is false for any other attributes.
func flatAttrs(r slog.Record) (b []byte, ok bool) {
	if r.NumAttrs() > maxFlatAttrs {
		return nil, false
	}
	var buf [maxFlatAttrs]slog.Attr
	attrs, ok := buf[:0], true
	r.Attrs(func(a slog.Attr) bool {
		a.Value = a.Value.Resolve()
		switch a.Value.Kind() {
		case slog.KindString, slog.KindInt64, slog.KindUint64, slog.KindBool, slog.KindDuration, slog.KindTime:
		default:
			ok = false
		}
		a.Key = driver.CleanText(a.Key, 0)
		ok = ok && a.Key != ""
		attrs = append(attrs, a)
		return ok
	})
	if !ok || len(attrs) == 0 {
		return nil, false
	}
	slices.SortFunc(attrs, func(x, y slog.Attr) int { return strings.Compare(x.Key, y.Key) })
	b = make([]byte, 0, 64)
	for i, a := range attrs {
		if i > 0 && a.Key == attrs[i-1].Key {
			return nil, false
		}
		b = append(b, ',')
		b = driver.AppendJSONString(b, a.Key)
		b = append(b, ':')
		v := a.Value
		switch v.Kind() {
		case slog.KindString:
			b = driver.AppendJSONString(b, driver.CleanText(v.String(), 0))
		case slog.KindInt64:
			b = strconv.AppendInt(b, v.Int64(), 10)
		case slog.KindUint64:
			b = strconv.AppendUint(b, v.Uint64(), 10)
		case slog.KindBool:
			b = strconv.AppendBool(b, v.Bool())
		case slog.KindDuration:
			b = driver.AppendJSONString(b, v.Duration().String())
		case slog.KindTime:
			b = append(b, '"')
			b = v.Time().UTC().AppendFormat(b, time.RFC3339Nano)
			b = append(b, '"')
		}
	}
	b[0] = '{'
	return append(b, '}'), true
}

// nestedAttrs returns the attributes of r, with those of the handler's
// frames, as a JSON object, through encoding/json.
func (h *jobHandler) nestedAttrs(r slog.Record) []byte {
	root := map[string]any{}
	cur := root
	for _, f := range h.frames {
		if f.group != "" {
			m := map[string]any{}
			cur[driver.CleanText(f.group, 0)] = m
			cur = m
			continue
		}
		for _, a := range f.attrs {
			putAttr(cur, a, 0)
		}
	}
	r.Attrs(func(a slog.Attr) bool {
		putAttr(cur, a, 0)
		return true
	})
	b, err := json.Marshal(root)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"!attrs": driver.CleanText(err.Error(), 256)})
	}
	return b
}

// putAttr sets a in m as JSON holds it, strings cleaned by the text rule.
func putAttr(m map[string]any, a slog.Attr, depth int) {
	v := a.Value.Resolve()
	if a.Key == "" && v.Kind() != slog.KindGroup {
		return
	}
	if v.Kind() == slog.KindGroup {
		sub := m
		if a.Key != "" {
			sub = map[string]any{}
		}
		for _, g := range v.Group() {
			if depth < maxMetaDepth {
				putAttr(sub, g, depth+1)
			}
		}
		if a.Key != "" && len(sub) > 0 {
			m[driver.CleanText(a.Key, 0)] = sub
		}
		return
	}
	m[driver.CleanText(a.Key, 0)] = jsonValue(v)
}

// jsonValue returns v as a value encoding/json encodes, text cleaned.
func jsonValue(v slog.Value) any {
	switch v.Kind() {
	case slog.KindString:
		return driver.CleanText(v.String(), 0)
	case slog.KindInt64:
		return v.Int64()
	case slog.KindUint64:
		return v.Uint64()
	case slog.KindFloat64:
		return v.Float64()
	case slog.KindBool:
		return v.Bool()
	case slog.KindDuration:
		return v.Duration().String()
	case slog.KindTime:
		return v.Time().UTC().Format(time.RFC3339Nano)
	}
	switch a := v.Any().(type) {
	case error:
		return driver.CleanText(a.Error(), 0)
	case json.Marshaler:
		if b, err := a.MarshalJSON(); err == nil && json.Valid(b) && driver.CheckJSON(b) == nil {
			return json.RawMessage(b)
		}
	case encoding.TextMarshaler:
		if b, err := a.MarshalText(); err == nil {
			return driver.CleanText(string(b), 0)
		}
	case fmt.Stringer:
		return driver.CleanText(a.String(), 0)
	}
	b, err := json.Marshal(v.Any())
	if err != nil || driver.CheckJSON(b) != nil {
		return driver.CleanText(fmt.Sprint(v.Any()), 0)
	}
	return json.RawMessage(b)
}
