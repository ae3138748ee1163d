package strictjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/strictjson"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tc := range []struct {
		name, text string
		reason     error  // nil: the text passes
		path       string // where the error is
	}{
		{"object", `{"a":1,"b":[true,false,null],"c":{"d":"e"}}`, nil, ""},
		{"white space around", " \t\r\n{} \n", nil, ""},
		{"scalars", `-0.5e+10`, nil, ""},
		{"a string", `"x"`, nil, ""},
		{"a surrogate pair", `{"s":"\ud83d\ude00"}`, nil, ""},
		{"escapes", `{"\"\\\/\b\f\n\r\t\u00e9":"é"}`, nil, ""},
		{"names equal only in other scripts' folding", `{"ß":1,"SS":2}`, nil, ""},
		{"as deep as encoding/json goes", deep(strictjson.MaxDepth), nil, ""},

		{"empty", ``, strictjson.ErrSyntax, ""},
		{"only space", `   `, strictjson.ErrSyntax, ""},
		{"no value", `{"a":}`, strictjson.ErrSyntax, "a"},
		{"a trailing comma", `[1,]`, strictjson.ErrSyntax, "[1]"},
		{"a leading zero", `01`, strictjson.ErrTrailing, ""},
		{"a bare minus", `-`, strictjson.ErrSyntax, ""},
		{"a bare point", `1.`, strictjson.ErrSyntax, ""},
		{"a cut literal", `tru`, strictjson.ErrSyntax, ""},
		{"an open string", `"a`, strictjson.ErrSyntax, ""},
		{"a control character", "\"a\nb\"", strictjson.ErrSyntax, ""},
		{"no colon", `{"a" 1}`, strictjson.ErrSyntax, "a"},
		{"a bad escape", `"\x"`, strictjson.ErrSyntax, ""},
		{"a short \\u", `"\u12"`, strictjson.ErrSyntax, ""},
		{"an unquoted name", `{a:1}`, strictjson.ErrSyntax, ""},

		{"invalid UTF-8 in a value", "{\"unique_key\":\"q\xff\"}", strictjson.ErrUTF8, "unique_key"},
		{"invalid UTF-8 in a name", "{\"q\xfe\":1}", strictjson.ErrUTF8, ""},
		{"invalid UTF-8 in an array", "{\"tags\":[\"a\",\"\xc3\"]}", strictjson.ErrUTF8, "tags[1]"},
		{"an encoded surrogate", "\"\xed\xa0\x80\"", strictjson.ErrUTF8, ""},
		{"a lone high surrogate", `{"a":"\ud800"}`, strictjson.ErrUTF8, "a"},
		{"a lone low surrogate", `{"a":"\udc00"}`, strictjson.ErrUTF8, "a"},
		{"a high surrogate and a letter", `{"a":"\ud800\u0041"}`, strictjson.ErrUTF8, "a"},
		{"a high surrogate at the end", `"\ud800x"`, strictjson.ErrUTF8, ""},

		{"a name twice", `{"a":1,"a":2}`, strictjson.ErrDuplicate, "a"},
		{"a name twice by case", `{"payload":{"user":"me"},"Payload":{"user":"you"}}`, strictjson.ErrDuplicate, "Payload"},
		{"by case, nested", `{"payload":{"user":"me","User":"you"}}`, strictjson.ErrDuplicate, "payload.User"},
		{"by the long s", `{"payload":{"user":"me","uſer":"you"}}`, strictjson.ErrDuplicate, "payload.uſer"},
		{"by the Kelvin sign", `{"k":1,"K":2}`, strictjson.ErrDuplicate, "K"},
		{"by an escape", `{"user":1,"\u0075ser":2}`, strictjson.ErrDuplicate, "user"},
		{"in an array", `[{"x":1},{"x":1,"X":2}]`, strictjson.ErrDuplicate, "[1].X"},
		{"in a map of many", `{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"k":1,"l":1,"m":1,"n":1,"o":1,"p":1,"q":1,"r":1,"A":1}`,
			strictjson.ErrDuplicate, "A"},
		{"a name with a space twice", `{"a b":1,"A B":1}`, strictjson.ErrDuplicate, `["A B"]`},

		{"a second object", `{} {}`, strictjson.ErrTrailing, ""},
		{"a second object far away", `{"topic":"a"}` + strings.Repeat(" ", 200000) + `{"topic":"b"}`, strictjson.ErrTrailing, ""},
		{"a stray letter", `{}x`, strictjson.ErrTrailing, ""},
		{"too deep", deep(strictjson.MaxDepth + 1), strictjson.ErrDepth, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := strictjson.Check([]byte(tc.text))
			if tc.reason == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.reason)
			var e *strictjson.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tc.path, e.Path, "%v", err)
		})
	}
}

// FuzzCheck compares Check with encoding/json: text it passes, encoding/json
// takes as one value with no two members one under its folding and without
// replacing a character; text encoding/json refuses, it refuses.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`{"topic":"noop","payload":{"user":"me"},"Payload":{"user":"you"}}`,
		`{"payload":{"user":"me","uſer":"you"}}`, `{"a":"\ud800"}`, `"\ud83d\ude00"`,
		"{\"tags\":[\"a\",\"\xff\"]}", `[1,2,{"a":[]}]`, `{"a":1} {"a":2}`, `-1.5e3`, `{"\u0041":1,"a":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := strictjson.Check(b)
		valid := json.Valid(b)
		var e *strictjson.Error
		if err != nil {
			require.ErrorAs(t, err, &e)
		}
		switch {
		case err == nil:
			require.True(t, valid, "Check passed what encoding/json refuses: %q", b)
			requireOneMeaning(t, b)
		case errors.Is(err, strictjson.ErrSyntax), errors.Is(err, strictjson.ErrTrailing), errors.Is(err, strictjson.ErrDepth):
			require.False(t, valid, "Check refused what encoding/json takes: %q: %v", b, err)
		}
		if !valid {
			require.Error(t, err)
		}
	})
}

// requireOneMeaning checks that encoding/json reads b without replacing a
// character and without a member name twice under its folding.
func requireOneMeaning(t *testing.T, b []byte) {
	t.Helper()
	var v any
	numbers := json.NewDecoder(bytes.NewReader(b))
	numbers.UseNumber()
	require.NoError(t, numbers.Decode(&v))
	again, err := json.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, strictjson.Check(again), "%q reads as %q", b, again)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	type frame struct {
		object bool
		names  []string
		key    bool // the next token of an object is a name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return
		}
		require.NoError(t, err)
		top := len(stack) - 1
		if top >= 0 && stack[top].object && stack[top].key {
			if name, ok := tok.(string); ok {
				for _, n := range stack[top].names {
					require.False(t, bytes.EqualFold([]byte(n), []byte(name)), "%q and %q in %q", n, name, b)
				}
				stack[top].names = append(stack[top].names, name)
				stack[top].key = false
				continue
			}
		}
		if top >= 0 && stack[top].object {
			stack[top].key = true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, key: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:top]
			if top > 0 && stack[top-1].object {
				stack[top-1].key = true
			}
		}
	}
}
