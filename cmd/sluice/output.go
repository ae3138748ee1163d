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

// count returns n and noun, made plural unless n is 1: "1 job", "2 jobs".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
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
		fmt.Fprintf(p.w, "\r%s: %d of %s (%d%%)", p.verb, done, count(p.total, "job"), min(100, done*100/p.total))
		return
	}
	fmt.Fprintf(p.w, "\r%s: %s", p.verb, count(done, "job"))
}

// end ends the line, if one was shown.
func (p *progress) end() {
	if p.shown {
		fmt.Fprintln(p.w)
	}
}
