package sluiceweb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/strictjson"
)

// decodeBody reads the request's body and decodes it into v, a pointer to
// a struct, and returns the body as read. The body must be sent as
// application/json (415 otherwise), hold at most the handler's body limit
// (413), and be one JSON object in valid UTF-8, with no member twice in any
// object at any depth, names equal under encoding/json's case folding
// counting as one (see package strictjson), and no member v does not have
// by its exact name (400). What the handler checks and stores is then
// what every later reader of the body and of the stored values sees.
func (h *Handler) decodeBody(w http.ResponseWriter, r *http.Request, v any) ([]byte, error) {
	return decodeBodyUpTo(w, r, v, h.bodyLimit)
}

// decodeBodyUpTo is decodeBody with a body of at most limit bytes.
func decodeBodyUpTo(w http.ResponseWriter, r *http.Request, v any, limit int64) ([]byte, error) {
	if err := jsonContentType(r); err != nil {
		return nil, err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, &problem{Status: http.StatusRequestEntityTooLarge, Code: CodePayloadTooLarge,
			Detail: fmt.Sprintf("the request body is over %d bytes", tooLarge.Limit)}
	case err != nil:
		return nil, &problem{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Detail: "reading the request body: " + err.Error()}
	case len(bytes.TrimSpace(body)) == 0:
		return nil, &problem{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Detail: "the request body is empty: want a JSON object"}
	}
	if err := strictjson.Check(body); err != nil {
		return nil, strictProblem(err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		return nil, bodyProblem(err)
	}
	if err := knownMembers("", members, v); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return nil, bodyProblem(err)
	}
	return body, nil
}

// knownMembers returns a problem naming the first of members (prefix
// before its name) that v, a pointer to a struct, has no field for by its
// exact JSON name: encoding/json alone would fill a field from a member
// named otherwise by case.
func knownMembers(prefix string, members map[string]json.RawMessage, v any) error {
	known := fieldNames(v)
	for _, name := range slices.Sorted(maps.Keys(members)) {
		if !known[name] {
			return badRequest(CodeInvalidRequest, prefix+name, "unknown field")
		}
	}
	return nil
}

// decodeObject decodes raw, an object within a body decodeBody checked,
// into v, a pointer to a struct, by the same rule: no member v has no
// field for by its exact name. field names raw in problems.
func decodeObject(field string, raw json.RawMessage, v any) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return badRequest(CodeInvalidRequest, field, "must be an object")
	}
	if err := knownMembers(field+".", members, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var wrongType *json.UnmarshalTypeError
		if errors.As(err, &wrongType) && wrongType.Field != "" {
			return badRequest(CodeInvalidRequest, field+"."+wrongType.Field,
				"must be "+jsonType(wrongType.Type.Kind().String())+", not "+wrongType.Value)
		}
		return badRequest(CodeInvalidRequest, field, err.Error())
	}
	return nil
}

// jsonContentType returns a problem (415) unless r's body is sent as
// application/json, in UTF-8 if it names a charset.
func jsonContentType(r *http.Request) error {
	types := r.Header.Values("Content-Type")
	var mediaType string
	var params map[string]string
	var err error
	if len(types) == 1 {
		mediaType, params, err = mime.ParseMediaType(types[0])
	}
	charset, named := params["charset"]
	if len(types) != 1 || err != nil || mediaType != "application/json" || (named && !strings.EqualFold(charset, "utf-8")) {
		return &problem{Status: http.StatusUnsupportedMediaType, Code: CodeUnsupportedMediaType,
			Detail: fmt.Sprintf("the request body must be sent as application/json (in UTF-8), not %s", quoteList(types))}
	}
	return nil
}

// strictProblem returns the problem of a body package strictjson refused:
// invalid_payload when the fault is in the member payload, invalid_request
// otherwise.
func strictProblem(err error) *problem {
	var e *strictjson.Error
	if !errors.As(err, &e) || e.Path == "" || errors.Is(err, strictjson.ErrSyntax) {
		return &problem{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Detail: "the request body " + err.Error()}
	}
	code := CodeInvalidRequest
	if payloadPath.MatchString(e.Path) {
		code = CodeInvalidPayload
	}
	detail := e.Err.Error()
	if e.Detail != "" {
		detail += ": " + e.Detail
	}
	return badRequest(code, e.Path, detail)
}

// payloadPath matches the paths within a payload: the body's, or that of
// a job in a list of them (tasks[3].payload.to).
var payloadPath = regexp.MustCompile(`^(?:[a-z_]+\[\d+\]\.)?payload(?:$|[.\[])`)

// bodyProblem returns the problem of a body encoding/json did not decode.
func bodyProblem(err error) *problem {
	var wrongType *json.UnmarshalTypeError
	if errors.As(err, &wrongType) {
		if wrongType.Field == "" {
			return &problem{Status: http.StatusBadRequest, Code: CodeInvalidRequest,
				Detail: "the request body must be a JSON object, not " + wrongType.Value}
		}
		return badRequest(CodeInvalidRequest, wrongType.Field, "must be "+jsonType(wrongType.Type.Kind().String())+", not "+wrongType.Value)
	}
	return &problem{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Detail: "the request body is not a JSON object: " + err.Error()}
}

// fieldNames returns the JSON names of the fields of the struct v points
// to, those of the structs it embeds included, as encoding/json promotes
// them.
func fieldNames(v any) map[string]bool {
	names := map[string]bool{}
	addFieldNames(reflect.TypeOf(v).Elem(), names)
	return names
}

func addFieldNames(t reflect.Type, names map[string]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			addFieldNames(f.Type, names)
		case name != "" && name != "-":
			names[name] = true
		}
	}
}

// jsonType names a Go kind as JSON does.
func jsonType(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"), strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "string":
		return "a string"
	case kind == "slice":
		return "an array"
	case kind == "bool":
		return "a boolean"
	}
	return "an object"
}

// jobID returns the path's job ID, or a problem if it is not a UUID.
func jobID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !isUUID(id) {
		return "", badRequest(CodeInvalidRequest, "id", fmt.Sprintf("%q is not a job ID (a UUID)", id))
	}
	return id, nil
}

// isUUID reports whether s is a UUID in its canonical form, as job IDs are
// (uuid.Parse also takes braces, URNs and 32 bare digits).
func isUUID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}

// query reads a request's query parameters, refusing those it does not
// know.
type query struct {
	values url.Values
}

// newQuery returns the query of r, or a problem naming a parameter that is
// not one of known.
func newQuery(r *http.Request, known ...string) (*query, error) {
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, &problem{Status: http.StatusBadRequest, Code: CodeInvalidFilter, Detail: "malformed query: " + err.Error()}
	}
	for name := range values {
		if !contains(known, name) && !slices.ContainsFunc(known, func(k string) bool {
			return strings.HasSuffix(k, ".") && strings.HasPrefix(name, k)
		}) {
			return nil, badRequest(CodeInvalidFilter, name, "unknown parameter; known: "+strings.Join(known, ", "))
		}
	}
	return &query{values: values}, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// list returns a parameter's values, each split at commas, empty ones
// dropped: ?topics=a,b&topics=c is [a b c].
func (q *query) list(name string) []string {
	var out []string
	for _, v := range q.values[name] {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// one returns a parameter's value, or a problem if it is given twice.
func (q *query) one(name string) (string, error) {
	vs := q.values[name]
	if len(vs) > 1 {
		return "", badRequest(CodeInvalidFilter, name, "given more than once")
	}
	if len(vs) == 0 {
		return "", nil
	}
	return vs[0], nil
}

// bool returns a boolean parameter (true, false, 1 or 0), false when
// absent.
func (q *query) bool(name string) (bool, error) {
	v, err := q.one(name)
	if err != nil || v == "" {
		return false, err
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badRequest(CodeInvalidFilter, name, fmt.Sprintf("%q is not true or false", v))
	}
	return b, nil
}

// prefixed returns the parameters named prefix<key>, by key, nil when
// there are none, or a problem for an empty key or one given twice.
func (q *query) prefixed(prefix string) (map[string]string, error) {
	var out map[string]string
	for name := range q.values {
		key, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		if key == "" {
			return nil, badRequest(CodeInvalidFilter, name, "names no key: give "+prefix+"<key>=<value>")
		}
		v, err := q.one(name)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = make(map[string]string)
		}
		out[key] = v
	}
	return out, nil
}

// int returns an integer parameter, def when absent.
func (q *query) int(name string, def int) (int, error) {
	v, err := q.one(name)
	if err != nil || v == "" {
		return def, err
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, badRequest(CodeInvalidFilter, name, fmt.Sprintf("%q is not an integer", v))
	}
	return n, nil
}

// time returns a time parameter in RFC 3339, zero when absent.
func (q *query) time(name string) (time.Time, error) {
	v, err := q.one(name)
	if err != nil || v == "" {
		return time.Time{}, err
	}
	return parseTime(CodeInvalidFilter, name, v)
}

// duration returns a duration parameter, def when absent.
func (q *query) duration(name string, def time.Duration) (time.Duration, error) {
	v, err := q.one(name)
	if err != nil || v == "" {
		return def, err
	}
	return parseDuration(CodeInvalidFilter, name, v)
}

// parseTime parses an RFC 3339 time.
func parseTime(code, field, v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, badRequest(code, field, fmt.Sprintf("%q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", v))
	}
	return t, nil
}

// parseDuration parses a non-negative Go duration.
func parseDuration(code, field, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, badRequest(code, field, fmt.Sprintf("%q is not a duration such as 90s, 15m or 1h30m", v))
	}
	if d < 0 {
		return 0, badRequest(code, field, fmt.Sprintf("%q is negative", v))
	}
	return d, nil
}

// statuses returns the statuses named, or a problem for an unknown one.
func statuses(field string, names []string) ([]sluice.JobStatus, error) {
	var out []sluice.JobStatus
	for i, n := range names {
		s := sluice.JobStatus(n)
		if !s.Valid() {
			return nil, badRequest(CodeInvalidFilter, fmt.Sprintf("%s[%d]", field, i),
				fmt.Sprintf("unknown status %q; statuses are pending, processing, completed, failed and cancelled", n))
		}
		out = append(out, s)
	}
	return out, nil
}
