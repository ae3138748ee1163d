package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// writeJSON writes v to w as indented JSON and a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// stamp formats a time for tables: RFC 3339 in UTC, "-" when zero.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// progress writes a progress line to w, rewritten in place, when enabled
// (stdout is a terminal); otherwise it writes nothing.
type progress struct {
	w       io.Writer
	enabled bool
	verb    string
	total   int
	shown   bool
}

// update shows done of total.
func (p *progress) update(done int) {
	if !p.enabled {
		return
	}
	p.shown = true
	if p.total > 0 {
		fmt.Fprintf(p.w, "\r%s: %d of %d jobs (%d%%)", p.verb, done, p.total, min(100, done*100/p.total))
		return
	}
	fmt.Fprintf(p.w, "\r%s: %d jobs", p.verb, done)
}

// end ends the line, if one was shown.
func (p *progress) end() {
	if p.shown {
		fmt.Fprintln(p.w)
	}
}
