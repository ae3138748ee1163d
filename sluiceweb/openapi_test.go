package sluiceweb_test

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// openAPIDoc is the handler's OpenAPI document, with a validator for the
// subset of JSON Schema it uses (type, a name or a list of names,
// properties, required,
// additionalProperties, items, enum, format and $ref), so that every
// response a test receives is checked against it.
type openAPIDoc struct {
	root  map[string]any
	paths map[string]any
}

var (
	docOnce sync.Once
	docData []byte
	// covered records the operations ("GET /api/jobs") that answered 2xx
	// in this run, checked against the document by TestMain.
	covered sync.Map
)

// loadDoc returns the document, fetched once from a handler.
func loadDoc(t *testing.T, url string) *openAPIDoc {
	t.Helper()
	docOnce.Do(func() {
		res, err := http.Get(url + "/sluice/api/openapi.json")
		if err != nil {
			return
		}
		defer res.Body.Close()
		docData, _ = io.ReadAll(res.Body)
	})
	var root map[string]any
	require.NoError(t, json.Unmarshal(docData, &root), "the OpenAPI document")
	return &openAPIDoc{root: root, paths: root["paths"].(map[string]any)}
}

// operation returns the path template that serves path (the one with the
// most literal segments) and its operation for method, if documented.
func (d *openAPIDoc) operation(method, path string) (string, map[string]any) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	best, bestLiterals := "", -1
	for tmpl := range d.paths {
		tsegs := strings.Split(strings.Trim(tmpl, "/"), "/")
		if len(tsegs) != len(segs) {
			continue
		}
		literals := 0
		for i, s := range tsegs {
			switch {
			case strings.HasPrefix(s, "{"):
			case s == segs[i]:
				literals++
			default:
				literals = -1
			}
			if literals < 0 {
				break
			}
		}
		if literals > bestLiterals {
			best, bestLiterals = tmpl, literals
		}
	}
	if best == "" {
		return "", nil
	}
	op, _ := d.paths[best].(map[string]any)[strings.ToLower(method)].(map[string]any)
	return best, op
}

// check requires the response to be one the document describes for the
// request, with a body its schema allows.
func (d *openAPIDoc) check(t *testing.T, method, path string, r *response) {
	t.Helper()
	mediaType, _, err := mime.ParseMediaType(r.header.Get("Content-Type"))
	require.NoError(t, err, "%s %s: Content-Type %q", method, path, r.header.Get("Content-Type"))
	tmpl, op := d.operation(method, path)
	if op == nil {
		// No endpoint: 404 or 405, a problem.
		require.Contains(t, []int{http.StatusNotFound, http.StatusMethodNotAllowed}, r.status, "%s %s is not documented", method, path)
		require.Equal(t, "application/problem+json", mediaType)
		d.requireValid(t, d.ref("#/components/schemas/Problem"), r.body, method+" "+path)
		return
	}
	responses := op["responses"].(map[string]any)
	spec, ok := responses[strconv.Itoa(r.status)].(map[string]any)
	if !ok {
		spec, ok = responses["default"].(map[string]any)
		require.True(t, ok, "%s %s: status %d not documented", method, tmpl, r.status)
	}
	media, ok := spec["content"].(map[string]any)[mediaType].(map[string]any)
	require.True(t, ok, "%s %s: status %d: media type %s not documented", method, tmpl, r.status, mediaType)
	if r.status/100 == 2 {
		covered.Store(method+" "+tmpl, true)
	}
	if mediaType == "text/event-stream" {
		return // events are checked one by one (see checkEvent)
	}
	d.requireValid(t, media["schema"].(map[string]any), r.body, fmt.Sprintf("%s %s %d", method, tmpl, r.status))
}

// requireValid requires body to be JSON valid against schema.
func (d *openAPIDoc) requireValid(t *testing.T, schema map[string]any, body []byte, what string) {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(body, &v), "%s: body is not JSON: %s", what, body)
	require.NoError(t, d.validate(schema, v, "$"), "%s: body %s", what, body)
}

// ref resolves a local reference.
func (d *openAPIDoc) ref(ref string) map[string]any {
	var node any = d.root
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		node = node.(map[string]any)[part]
	}
	return node.(map[string]any)
}

// validate checks v against schema; at names v in errors.
func (d *openAPIDoc) validate(schema map[string]any, v any, at string) error {
	if r, ok := schema["$ref"].(string); ok {
		return d.validate(d.ref(r), v, at)
	}
	if t, ok := schema["type"].(string); ok && !hasType(t, v) {
		return fmt.Errorf("%s: want %s, got %T %v", at, t, v, v)
	}
	if ts, ok := schema["type"].([]any); ok && !slices.ContainsFunc(ts, func(t any) bool { return hasType(t.(string), v) }) {
		return fmt.Errorf("%s: want one of %v, got %T %v", at, ts, v, v)
	}
	if values, ok := schema["enum"].([]any); ok && !slices.Contains(values, v) {
		return fmt.Errorf("%s: %v is not one of %v", at, v, values)
	}
	switch v := v.(type) {
	case map[string]any:
		return d.validateObject(schema, v, at)
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i, item := range v {
				if err := d.validate(items, item, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case string:
		switch schema["format"] {
		case "date-time":
			if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
				return fmt.Errorf("%s: %q is not a date-time", at, v)
			}
		case "uuid":
			if _, err := uuid.Parse(v); err != nil {
				return fmt.Errorf("%s: %q is not a UUID", at, v)
			}
		}
	}
	return nil
}

func (d *openAPIDoc) validateObject(schema, v map[string]any, at string) error {
	required, _ := schema["required"].([]any)
	for _, name := range required {
		if _, ok := v[name.(string)]; !ok {
			return fmt.Errorf("%s: required member %q missing", at, name)
		}
	}
	props, _ := schema["properties"].(map[string]any)
	for name, value := range v {
		if p, ok := props[name].(map[string]any); ok {
			if err := d.validate(p, value, at+"."+name); err != nil {
				return err
			}
			continue
		}
		switch extra := schema["additionalProperties"].(type) {
		case bool:
			if !extra {
				return fmt.Errorf("%s: member %q is not documented", at, name)
			}
		case map[string]any:
			if err := d.validate(extra, value, at+"."+name); err != nil {
				return err
			}
		}
	}
	return nil
}

func hasType(t string, v any) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	case "null":
		return v == nil
	}
	return false
}

// checkEvent requires an event's data to be as documented: a LogEvent
// for an event named log, a Change for the others.
func (d *openAPIDoc) checkEvent(t *testing.T, name, data string) {
	t.Helper()
	op := d.paths["/api/events"].(map[string]any)["get"].(map[string]any)
	ok := op["responses"].(map[string]any)["200"].(map[string]any)
	schema := "x-event-data"
	if name == "log" {
		schema = "x-log-event-data"
	}
	d.requireValid(t, ok[schema].(map[string]any), []byte(data), name+" event data")
}

// uncoveredOperations returns the document's operations that answered no
// 2xx in this run.
func uncoveredOperations() []string {
	var root map[string]any
	if err := json.Unmarshal(docData, &root); err != nil {
		return []string{"the OpenAPI document was never fetched"}
	}
	var missing []string
	for path, item := range root["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			key := strings.ToUpper(method) + " " + path
			if _, ok := covered.Load(key); !ok {
				missing = append(missing, key)
			}
		}
	}
	slices.Sort(missing)
	return missing
}
