package driver_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func TestCheckText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    string
		want error
	}{
		{"", nil},
		{"mail_digest", nil},
		{"é ☃ 𝄞", nil},
		{"a\x00b", driver.ErrTextNUL},
		{"\xff", driver.ErrTextUTF8},
		{"\xff\x00", driver.ErrTextUTF8},
		{`\u0000`, nil}, // the text of an escape, not a NUL
	} {
		require.Equal(t, tc.want, driver.CheckText(tc.s), "%q", tc.s)
	}
}

func TestCheckJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		b    string
		want error
	}{
		{`{"a":"b"}`, nil},
		{`{"a":"\u0000"}`, driver.ErrTextNUL},
		{`{"a":"x\u0000y"}`, driver.ErrTextNUL},
		{`{"a":"\\u0000"}`, nil},                // an escaped backslash, then u0000
		{`{"a":"\\\u0000"}`, driver.ErrTextNUL}, // an escaped backslash, then a NUL
		{"{\"a\":\"\xff\"}", driver.ErrTextUTF8},
	} {
		require.Equal(t, tc.want, driver.CheckJSON([]byte(tc.b)), "%s", tc.b)
	}
}

func TestCleanText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"boom", 100, "boom"},
		{"boom", 0, "boom"},
		{"a\x00b", 0, "a\uFFFDb"},
		{"a\xffb", 0, "a\uFFFDb"},
		{strings.Repeat("x", 30), 20, "xxxxx… (truncated)"},
		{strings.Repeat("é", 30), 20, "éé… (truncated)"}, // never half a character
		{strings.Repeat("x", 30), 5, "xxxxx"},            // no room for the mark
	} {
		got := driver.CleanText(tc.s, tc.n)
		require.Equal(t, tc.want, got, "%q cut to %d", tc.s, tc.n)
		if tc.n > 0 {
			require.LessOrEqual(t, len(got), tc.n)
		}
	}
}

func TestMatchable(t *testing.T) {
	t.Parallel()
	require.True(t, driver.Matchable())
	require.True(t, driver.Matchable("", "mail", "é ☃"))
	require.False(t, driver.Matchable("mail", "a\x00b"))
	require.False(t, driver.Matchable("\xff", "mail"))
}

func TestMatchableAmong(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []string
		want []string
		ok   bool
	}{
		{nil, nil, true},
		{[]string{}, []string{}, true},
		{[]string{"a", "b"}, []string{"a", "b"}, true},
		{[]string{"a\x00", "b", "\xff"}, []string{"b"}, true},
		{[]string{"a\x00", "\xff"}, []string{}, false}, // empty, not nil: it matches nothing
	} {
		got, ok := driver.MatchableAmong(tc.in)
		require.Equal(t, tc.want, got, "%q", tc.in)
		require.Equal(t, tc.ok, ok, "%q", tc.in)
	}
}

func TestJobFilterMatchable(t *testing.T) {
	t.Parallel()
	const nul, bad = "a\x00b", "q\xff"
	for _, tc := range []struct {
		name string
		f    driver.JobFilter
		want driver.JobFilter
		ok   bool
	}{
		{"zero", driver.JobFilter{}, driver.JobFilter{}, true},
		{"clean", driver.JobFilter{Topics: []string{"t"}, UniqueKey: "k", Tags: []string{"x"}, Metadata: map[string]string{"m": "v"}},
			driver.JobFilter{Topics: []string{"t"}, UniqueKey: "k", Tags: []string{"x"}, Metadata: map[string]string{"m": "v"}}, true},
		{"topic among others", driver.JobFilter{Topics: []string{nul, "t"}}, driver.JobFilter{Topics: []string{"t"}}, true},
		{"status among others", driver.JobFilter{Statuses: []driver.JobStatus{driver.StatusPending, bad}},
			driver.JobFilter{Statuses: []driver.JobStatus{driver.StatusPending}}, true},
		{"queue among others", driver.JobFilter{Queues: []string{"q", bad}}, driver.JobFilter{Queues: []string{"q"}}, true},
		{"any tag among others", driver.JobFilter{Tags: []string{bad, "x"}, AnyTag: true},
			driver.JobFilter{Tags: []string{"x"}, AnyTag: true}, true},
		{"only bad topics", driver.JobFilter{Topics: []string{nul, bad}}, driver.JobFilter{Topics: []string{}}, false},
		{"only bad queues", driver.JobFilter{Queues: []string{bad}}, driver.JobFilter{Queues: []string{}}, false},
		{"only bad statuses", driver.JobFilter{Statuses: []driver.JobStatus{nul}}, driver.JobFilter{Statuses: []driver.JobStatus{}}, false},
		{"only bad any tags", driver.JobFilter{Tags: []string{nul}, AnyTag: true},
			driver.JobFilter{Tags: []string{}, AnyTag: true}, false},
		{"a required tag", driver.JobFilter{Tags: []string{"x", bad}}, driver.JobFilter{Tags: []string{"x", bad}}, false},
		{"unique key", driver.JobFilter{UniqueKey: nul}, driver.JobFilter{UniqueKey: nul}, false},
		{"metadata key", driver.JobFilter{Metadata: map[string]string{bad: "v"}}, driver.JobFilter{Metadata: map[string]string{bad: "v"}}, false},
		{"metadata value", driver.JobFilter{Metadata: map[string]string{"m": nul}}, driver.JobFilter{Metadata: map[string]string{"m": nul}}, false},
	} {
		before := tc.f
		before.Topics = slices.Clone(tc.f.Topics)
		got, ok := tc.f.Matchable()
		require.Equal(t, tc.ok, ok, tc.name)
		require.Equal(t, tc.want, got, tc.name)
		require.Equal(t, before, tc.f, "%s: the filter itself changed", tc.name)
	}
}

func TestCheckKey(t *testing.T) {
	t.Parallel()
	require.NoError(t, driver.CheckKey("schedule", "stored", "nightly"))
	err := driver.CheckKey("schedule", "stored", "a\x00b")
	require.ErrorIs(t, err, driver.ErrTextNUL)
	require.Equal(t, `schedule "a\x00b" contains a NUL character, which Postgres cannot store`, err.Error())
	require.ErrorIs(t, driver.CheckKey("queue", "q\xff"), driver.ErrTextUTF8)
}

// FuzzCheckJSON checks the NUL test on encoded JSON against the text
// encoded: it finds a NUL character exactly when the text has one, whatever
// backslashes surround it.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{"", "a", "\x00", `\u0000`, "\\\x00", `\\u0000`, "a\x00b", "\xff\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := json.Marshal(map[string]string{s: s})
		require.NoError(t, err)
		if strings.Contains(s, "\x00") {
			require.Equal(t, driver.ErrTextNUL, driver.CheckJSON(b), "%q", b)
		} else {
			require.NoError(t, driver.CheckJSON(b), "%q", b)
		}
	})
}

// FuzzCleanText checks what an enormous or odd error is stored as: valid
// UTF-8 without NUL, at most the limit, and unchanged when it was short and
// clean already.
func FuzzCleanText(f *testing.F) {
	f.Add("boom", 4096)
	f.Add(strings.Repeat("é", 3000), 4096)
	f.Add("a\x00b", 2)
	f.Add("\xff\xfe", 20)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = 20 + int(uint(n)%(1<<14))
		got := driver.CleanText(s, n)
		require.NoError(t, driver.CheckText(got))
		require.LessOrEqual(t, len(got), n)
		clean := strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
		if len(clean) <= n {
			require.Equal(t, clean, got)
		} else {
			require.True(t, strings.HasSuffix(got, "… (truncated)"))
			require.True(t, strings.HasPrefix(clean, strings.TrimSuffix(got, "… (truncated)")))
		}
		require.True(t, utf8.ValidString(got))
	})
}
