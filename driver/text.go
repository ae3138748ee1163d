package driver

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Reasons [CheckText] and [CheckJSON] give for text that breaks the text
// rule.
var (
	// ErrTextNUL is text holding a NUL character, or JSON holding the
	// escape \u0000.
	ErrTextNUL = errors.New("contains a NUL character, which Postgres cannot store")
	// ErrTextUTF8 is text that is not valid UTF-8.
	ErrTextUTF8 = errors.New("is not valid UTF-8")
)

// CheckText returns ErrTextNUL or ErrTextUTF8 when s breaks the text rule,
// and nil when every driver can store it.
func CheckText(s string) error {
	if !utf8.ValidString(s) {
		return ErrTextUTF8
	}
	if strings.IndexByte(s, 0) >= 0 {
		return ErrTextNUL
	}
	return nil
}

// Matchable reports whether every one of texts follows the text rule, so
// that a stored text may equal it. A lookup by a text that does not finds
// nothing (see "Lookups by text" in the package doc).
func Matchable(texts ...string) bool {
	for _, s := range texts {
		if CheckText(s) != nil {
			return false
		}
	}
	return true
}

// MatchableAmong returns the texts of a list of alternatives that follow
// the text rule, and false when the list held some but none of them do:
// then it can match nothing, and the list returned is empty but not nil.
// It returns texts itself when every one follows the rule.
func MatchableAmong[S ~string](texts []S) ([]S, bool) {
	i := slices.IndexFunc(texts, func(s S) bool { return CheckText(string(s)) != nil })
	if i < 0 {
		return texts, true
	}
	kept := append(make([]S, 0, len(texts)-1), texts[:i]...)
	for _, s := range texts[i+1:] {
		if CheckText(string(s)) == nil {
			kept = append(kept, s)
		}
	}
	return kept, len(kept) > 0
}

// Matchable returns f without the values that break the text rule in its
// lists of alternatives (Statuses, Topics, Queues, Keys, GroupIDs, IDs, and
// Tags with AnyTag),
// and false when f can select no job: a value it requires (UniqueKey, a
// tag without AnyTag, a metadata key or value) breaks the rule, or a list
// of alternatives holds only such values. f itself is not changed.
func (f *JobFilter) Matchable() (JobFilter, bool) {
	g := *f
	var statuses, topics, queues, keys, groups, ids, tags bool
	g.Statuses, statuses = MatchableAmong(f.Statuses)
	g.Topics, topics = MatchableAmong(f.Topics)
	g.Queues, queues = MatchableAmong(f.Queues)
	g.Keys, keys = MatchableAmong(f.Keys)
	g.GroupIDs, groups = MatchableAmong(f.GroupIDs)
	g.IDs, ids = MatchableAmong(f.IDs)
	if f.AnyTag {
		g.Tags, tags = MatchableAmong(f.Tags)
	} else {
		tags = Matchable(f.Tags...)
	}
	ok := statuses && topics && queues && keys && groups && ids && tags && Matchable(f.UniqueKey)
	for k, v := range f.Metadata {
		ok = ok && Matchable(k, v)
	}
	for _, m := range f.Payload {
		ok = ok && Matchable(m.Path...) && CheckJSON(m.Value) == nil
	}
	return g, ok
}

// CheckKey returns nil when every text of the key that a write stores a
// new row under follows the text rule, and otherwise an error naming the
// key (what it is, as in "queue") that wraps ErrTextNUL or ErrTextUTF8:
// no lookup could find such a row again.
func CheckKey(what string, texts ...string) error {
	for _, s := range texts {
		if err := CheckText(s); err != nil {
			return fmt.Errorf("%s %q %w", what, s, err)
		}
	}
	return nil
}

// nulEscape is how encoding/json writes a NUL character.
var nulEscape = []byte(`\u0000`)

// CheckJSON returns ErrTextNUL when the encoded JSON b holds the escape
// \u0000 (as opposed to an escaped backslash followed by "u0000"), and
// ErrTextUTF8 when it is not valid UTF-8; nil when every driver can store
// it. It does not check that b is JSON.
func CheckJSON(b []byte) error {
	if !utf8.Valid(b) {
		return ErrTextUTF8
	}
	if !bytes.Contains(b, nulEscape) {
		return nil // the common case, without a byte-by-byte walk
	}
	for i := 0; i+6 <= len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if string(b[i:i+6]) == `\u0000` {
			return ErrTextNUL
		}
		i++ // skip the escaped character, so \\u0000 does not match
	}
	return nil
}

// truncatedMark ends a text that CleanText cut.
const truncatedMark = "… (truncated)"

// CleanText returns s made to follow the text rule: each NUL character and
// each invalid UTF-8 sequence becomes U+FFFD, and the result is cut to at
// most n bytes, without splitting a character, ending with "… (truncated)"
// when cut. n <= 0 keeps the whole text. Text that follows the rule and
// fits is returned as it is.
func CleanText(s string, n int) string {
	if CheckText(s) != nil {
		s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	}
	if n <= 0 || len(s) <= n {
		return s
	}
	mark := truncatedMark
	if n < len(mark) {
		mark = ""
	}
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
