package driver

import (
	"bytes"
	"errors"
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
