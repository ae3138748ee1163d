// Package strictjson checks that JSON text means one thing to every reader
// of it.
//
// encoding/json is lenient where a reader that checks a value and a reader
// that acts on it may disagree: it replaces invalid UTF-8 and lone UTF-16
// surrogate escapes by U+FFFD, keeps the last of two members with one
// name, and matches a member to a struct field whatever its case
// ("User", "USER" and "uſer" all fill the field tagged "user"). A request
// checked by one parse and stored or worked by another can then be checked
// as one thing and run as another. [Check] refuses the text instead; a
// [Fields] refuses members that fill a Go type's field only by case.
package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The reasons an [Error] gives.
var (
	// ErrSyntax is text that is not JSON.
	ErrSyntax = errors.New("is not JSON")
	// ErrUTF8 is text that is not valid UTF-8, or a string holding an
	// escaped lone UTF-16 surrogate (\ud800 without its pair), which no
	// character is.
	ErrUTF8 = errors.New("is not valid UTF-8")
	// ErrDuplicate is an object with two members whose names are equal
	// under encoding/json's case folding ("user" and "User").
	ErrDuplicate = errors.New("has a member twice")
	// ErrTrailing is text that goes on after its one JSON value.
	ErrTrailing = errors.New("has more after its JSON value")
	// ErrDepth is text nested deeper than MaxDepth.
	ErrDepth = errors.New("nests too deep")
	// ErrCase is a member whose name is a Go field's only under case
	// folding: encoding/json fills the field, a reader of the text would
	// not find it.
	ErrCase = errors.New("names a field only by case")
)

// MaxDepth is how deep arrays and objects may nest, as deep as
// encoding/json decodes.
const MaxDepth = 10000

// Error says what is wrong with JSON text and where.
type Error struct {
	// Path is where: empty for the text as a whole, else the member or
	// element at fault, such as `user`, `tags[1]` or `a["b c"].d`.
	Path string
	// Err is one of the reasons above.
	Err error
	// Detail says more, for people; it may be empty.
	Detail string
}

// Error implements error.
func (e *Error) Error() string {
	msg := e.Err.Error()
	if e.Path != "" {
		msg = e.Path + ": " + msg
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap returns the reason.
func (e *Error) Unwrap() error { return e.Err }

// Check returns nil when b is exactly one JSON value (white space around
// it allowed) in valid UTF-8, holding no escaped lone surrogate, nesting
// at most MaxDepth deep, and without an object that has two members whose
// names are equal under encoding/json's case folding. Otherwise it returns
// an *Error.
func Check(b []byte) error {
	return check(b, nil)
}

// check checks b, and with f the names of its members against a Go type's
// fields.
func check(b []byte, f *Fields) error {
	s := scanner{b: b, fields: f}
	s.space()
	if s.i == len(s.b) {
		return s.fail(ErrSyntax, "no value")
	}
	if err := s.value(f.root()); err != nil {
		return err
	}
	s.space()
	if s.i < len(s.b) {
		return &Error{Err: ErrTrailing, Detail: fmt.Sprintf("at byte %d", s.i)}
	}
	return nil
}

// pathStep is one step of the path to the value being read: an object's
// member or an array's element.
type pathStep struct {
	key   string
	index int // -1 for a member
}

// scanner reads JSON text byte by byte.
type scanner struct {
	b      []byte
	i      int
	path   []pathStep
	fields *Fields
	buf    []byte // a key being unescaped
}

// fail returns an error at the current path.
func (s *scanner) fail(reason error, detail string) error {
	return &Error{Path: s.pathString(), Err: reason, Detail: detail}
}

// syntax returns a syntax error at the current byte.
func (s *scanner) syntax(want string) error {
	if s.i >= len(s.b) {
		return s.fail(ErrSyntax, "the text ends where "+want+" should be")
	}
	return s.fail(ErrSyntax, fmt.Sprintf("%q at byte %d where %s should be", s.b[s.i], s.i, want))
}

// pathString renders the path.
func (s *scanner) pathString() string {
	var b strings.Builder
	for _, p := range s.path {
		switch {
		case p.index >= 0:
			b.WriteString("[" + strconv.Itoa(p.index) + "]")
		case plainKey(p.key):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p.key)
		default:
			b.WriteString("[" + strconv.Quote(p.key) + "]")
		}
	}
	return b.String()
}

// plainKey reports whether a key can stand in a path without quotes.
func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if r != '_' && r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// space skips white space.
func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value reads one value, of Go type t when t is not nil.
func (s *scanner) value(t *typeFields) error {
	if s.i >= len(s.b) {
		return s.syntax("a value")
	}
	switch c := s.b[s.i]; {
	case (c == '{' || c == '[') && len(s.path) >= MaxDepth:
		return &Error{Err: ErrDepth, Detail: fmt.Sprintf("more than %d levels, at byte %d", MaxDepth, s.i)}
	case c == '{':
		return s.object(t)
	case c == '[':
		return s.array(t)
	case c == '"':
		_, err := s.str(false)
		return err
	case c == '-' || ('0' <= c && c <= '9'):
		return s.number()
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
			s.i += len(lit)
			return nil
		}
	}
	return s.syntax("a value")
}

// object reads an object, refusing a member name given twice.
func (s *scanner) object(t *typeFields) error {
	s.i++ // {
	var seen foldSet
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return s.syntax("a member name")
		}
		key, err := s.str(true)
		if err != nil {
			return err
		}
		folded := foldName(key)
		if first, dup := seen.add(key, folded); dup {
			s.path = append(s.path, pathStep{key: key, index: -1})
			return s.fail(ErrDuplicate, fmt.Sprintf("%q and %q are one member to encoding/json", first, key))
		}
		child, err := t.member(key, folded)
		s.path = append(s.path, pathStep{key: key, index: -1})
		if err != nil {
			return s.fail(ErrCase, err.Error())
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return s.syntax("a colon")
		}
		s.i++
		s.space()
		if err := s.value(child); err != nil {
			return err
		}
		s.path = s.path[:len(s.path)-1]
		if end, err := s.after('}'); end || err != nil {
			return err
		}
	}
}

// array reads an array.
func (s *scanner) array(t *typeFields) error {
	s.i++ // [
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	elem := t.element()
	for n := 0; ; n++ {
		s.space()
		s.path = append(s.path, pathStep{index: n})
		if err := s.value(elem); err != nil {
			return err
		}
		s.path = s.path[:len(s.path)-1]
		if end, err := s.after(']'); end || err != nil {
			return err
		}
	}
}

// after reads what follows a member or an element: a comma, or end, the
// byte that closes the object or array, when it reports true.
func (s *scanner) after(end byte) (bool, error) {
	s.space()
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case ',':
			s.i++
			return false, nil
		case end:
			s.i++
			return true, nil
		}
	}
	return false, s.syntax("a comma or " + string(end))
}

// number reads a number, as RFC 8259 writes them.
func (s *scanner) number() error {
	start := s.i
	if s.b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case digits() == 0:
		return s.syntax("a digit")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return s.syntax("a digit")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return s.syntax("a digit")
		}
	}
	if s.i == start {
		return s.syntax("a number")
	}
	return nil
}

// str reads a string. With unescape it returns the string's text, as
// encoding/json decodes it; otherwise it only checks it.
func (s *scanner) str(unescape bool) (string, error) {
	s.i++      // "
	seg := s.i // the start of the text not yet copied to s.buf
	s.buf = s.buf[:0]
	escaped := false
	for {
		if s.i >= len(s.b) {
			return "", s.syntax("the string's closing quote")
		}
		switch c := s.b[s.i]; {
		case c == '"':
			end := s.i
			s.i++
			switch {
			case !unescape:
				return "", nil
			case escaped:
				return string(append(s.buf, s.b[seg:end]...)), nil
			}
			return string(s.b[seg:end]), nil
		case c == '\\':
			s.buf = append(s.buf, s.b[seg:s.i]...)
			escaped = true
			r, err := s.escape()
			if err != nil {
				return "", err
			}
			s.buf = utf8.AppendRune(s.buf, r)
			seg = s.i
		case c < 0x20:
			return "", s.syntax("a string's character (a control character must be escaped)")
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, n := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && n == 1 {
				return "", s.fail(ErrUTF8, fmt.Sprintf("byte %#x at byte %d", c, s.i))
			}
			s.i += n
		}
	}
}

// escape reads the escape at s.i and returns the character it stands for.
func (s *scanner) escape() (rune, error) {
	s.i++ // backslash
	if s.i >= len(s.b) {
		return 0, s.syntax("an escaped character")
	}
	c := s.b[s.i]
	s.i++
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
	default:
		s.i--
		return 0, s.syntax("an escape (\\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t or \\u)")
	}
	r, err := s.hex4()
	if err != nil {
		return 0, err
	}
	switch {
	case r < 0xD800 || r > 0xDFFF:
		return r, nil
	case r >= 0xDC00:
		return 0, s.fail(ErrUTF8, fmt.Sprintf("\\u%04x at byte %d is half of a UTF-16 pair, without its first half", r, s.i-6))
	}
	if s.i+6 <= len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
		s.i += 2
		lo, err := s.hex4()
		if err != nil {
			return 0, err
		}
		if 0xDC00 <= lo && lo <= 0xDFFF {
			return utf16Pair(r, lo), nil
		}
	}
	return 0, s.fail(ErrUTF8, fmt.Sprintf("\\u%04x before byte %d is half of a UTF-16 pair, without its second half", r, s.i))
}

// hex4 reads the four hexadecimal digits of a \u escape.
func (s *scanner) hex4() (rune, error) {
	if s.i+4 > len(s.b) {
		s.i = len(s.b)
		return 0, s.syntax("four hexadecimal digits")
	}
	var r rune
	for _, c := range s.b[s.i : s.i+4] {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, s.syntax("four hexadecimal digits")
		}
		r = r<<4 | rune(d)
	}
	s.i += 4
	return r, nil
}

// utf16Pair returns the character a UTF-16 surrogate pair stands for.
func utf16Pair(hi, lo rune) rune {
	return (hi-0xD800)<<10 | (lo - 0xDC00) + 0x10000
}

// foldName returns name folded as encoding/json folds member names to
// match them to fields: two names are one member to it when their folded
// forms are equal.
func foldName(name string) string {
	i := 0
	for i < len(name) && name[i] < utf8.RuneSelf && (name[i] < 'a' || name[i] > 'z') {
		i++
	}
	if i == len(name) {
		return name // already folded: the common case of upper-case or non-letter ASCII
	}
	var b strings.Builder
	b.Grow(len(name))
	b.WriteString(name[:i])
	for _, r := range name[i:] {
		switch {
		case 'a' <= r && r <= 'z':
			r -= 'a' - 'A'
		case r >= utf8.RuneSelf:
			r = foldRune(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// foldRune returns the smallest character of r's case-folding orbit.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// foldSet holds the folded names of an object's members.
type foldSet struct {
	names  []string // folded, while few
	firsts []string // the names as given
	m      map[string]string
}

// add adds a member's name, folded, and reports the name already added
// with the same folded form, if there is one.
func (f *foldSet) add(name, folded string) (string, bool) {
	const few = 16
	if f.m != nil {
		if first, ok := f.m[folded]; ok {
			return first, true
		}
		f.m[folded] = name
		return "", false
	}
	for i, n := range f.names {
		if n == folded {
			return f.firsts[i], true
		}
	}
	f.names = append(f.names, folded)
	f.firsts = append(f.firsts, name)
	if len(f.names) > few {
		f.m = make(map[string]string, 2*few)
		for i, n := range f.names {
			f.m[n] = f.firsts[i]
		}
	}
	return "", false
}
