package sluiceweb

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/strictjson"
)

// FuzzDecodeBody decodes bodies into each request type: one that is taken
// is valid UTF-8 that reads the same to any reader (one JSON object, no
// member twice, none named by case only), and its decoded strings are
// the body's own, none replaced.
func FuzzDecodeBody(f *testing.F) {
	bad := []string{"\xff", "\xc3", "\xed\xa0\x80", `\ud800`, `\udfff`, `\ud800\u0041`}
	members := []string{
		`"topic":"%s"`, `"payload":{"to":"%s"}`, `"payload":{"%s":1}`, `"run_at":"%s"`, `"delay":"%s"`,
		`"queue":"%s"`, `"unique_key":"%s"`, `"tags":["a","%s"]`, `"metadata":{"k":"%s"}`, `"metadata":{"%s":"v"}`,
		`"depends_on":["%s"]`, `"on_dependency_failure":"%s"`, `"topics":["%s"]`, `"statuses":["%s"]`,
		`"queues":["%s"]`, `"created_from":"%s"`, `"name":"%s"`, `"cron":"%s"`, `"time_zone":"%s"`, `"catch_up":"%s"`,
	}
	for _, m := range members {
		for _, b := range bad {
			f.Add([]byte(`{` + strings.Replace(m, "%s", b, 1) + `}`))
		}
	}
	for _, s := range []string{
		`{"topic":"mail","payload":{"to":"a"},"Payload":{"to":"b"}}`, `{"topic":"mail","payload":{"to":"a","To":"b"}}`,
		`{"topic":"mail","payload":{"user":"a","uſer":"b"}}`, `{"Topic":"mail"}`, `{"topic":"mail"} {}`,
		`{"topics":["mail"],"metadata":{"a":"b","A":"c"}}`, `{"name":"n","cron":"@daily","topic":"t","enabled":false}`,
	} {
		f.Add([]byte(s))
	}
	h := &Handler{bodyLimit: 1 << 20}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, v := range []any{&enqueueRequest{}, &filterRequest{}, &scheduleRequest{}} {
			r := httptest.NewRequest(http.MethodPost, "/api/jobs", bytes.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			got, err := h.decodeBody(httptest.NewRecorder(), r, v)
			if err != nil {
				var p *problem
				require.ErrorAs(t, err, &p)
				require.Equal(t, http.StatusBadRequest, p.Status)
				continue
			}
			require.Equal(t, body, got)
			require.True(t, utf8.Valid(body), "%q", body)
			require.NoError(t, strictjson.Check(body), "%q", body)
			requireStringsFromBody(t, reflect.ValueOf(v).Elem(), body)
			requireExactMembers(t, v, body)
		}
	})
}

// requireStringsFromBody requires every string decoded into v to be valid
// UTF-8, and one holding U+FFFD to come from a body that has it.
func requireStringsFromBody(t *testing.T, v reflect.Value, body []byte) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		require.True(t, utf8.ValidString(s), "%q from %q", s, body)
		if strings.ContainsRune(s, utf8.RuneError) {
			require.True(t, bytes.Contains(body, []byte("\uFFFD")) || bytes.Contains(bytes.ToLower(body), []byte(`\ufffd`)),
				"U+FFFD in %q, not in %q", s, body)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			requireStringsFromBody(t, v.Field(i), body)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // json.RawMessage: the body's own bytes
			require.True(t, utf8.Valid(v.Bytes()))
			return
		}
		for i := range v.Len() {
			requireStringsFromBody(t, v.Index(i), body)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			requireStringsFromBody(t, k, body)
			requireStringsFromBody(t, v.MapIndex(k), body)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			requireStringsFromBody(t, v.Elem(), body)
		}
	}
}

// requireExactMembers requires v to be what decoding each member of body
// into the field of exactly its name gives: no member filled a field it
// names only by case.
func requireExactMembers(t *testing.T, v any, body []byte) {
	t.Helper()
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &members))
	want := reflect.New(reflect.TypeOf(v).Elem())
	for i := range want.Elem().NumField() {
		name, _, _ := strings.Cut(want.Elem().Type().Field(i).Tag.Get("json"), ",")
		if raw, ok := members[name]; ok {
			require.NoError(t, json.Unmarshal(raw, want.Elem().Field(i).Addr().Interface()))
		}
	}
	require.Equal(t, want.Interface(), v)
}
