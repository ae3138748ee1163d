package driver_test

import (
	"encoding/json"
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
