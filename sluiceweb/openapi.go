package sluiceweb

import (
	"encoding/json"
	"maps"
	"net/http"
	"strconv"
	"strings"
)

// openAPI is the OpenAPI 3.1 document of the API, built once; the tests
// check the handler's real answers against it.
var openAPI = func() []byte {
	b, err := json.MarshalIndent(openAPIDocument(), "", "  ")
	if err != nil {
		panic(err) // maps of strings, numbers and slices always encode
	}
	return b
}()

// serveOpenAPI serves GET api/openapi.json. It needs no authorization: it
// describes the API and holds no data.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Length", strconv.Itoa(len(openAPI)))
	_, _ = w.Write(openAPI)
}

// param is a query, path or header parameter.
func param(in, name string, schema obj, description string) obj {
	p := obj{"in": in, "name": name, "schema": schema, "description": description}
	if in == "path" {
		p["required"] = true
	}
	return p
}

var (
	idParam    = param("path", "id", uuidString(""), "The job's ID.")
	topicsList = param("query", "topics", str(""), "Only jobs of these topics, comma-separated (or the parameter repeated).")
	queuesList = param("query", "queues", str(""), "Only jobs in these queues, comma-separated (or repeated).")
)

// listParams' documentation, in their order.
func listParameters() []obj {
	return []obj{
		topicsList,
		param("query", "statuses", str(""), "Only jobs with these statuses, comma-separated (or repeated): pending, processing, completed, failed, cancelled."),
		queuesList,
		param("query", "unique_key", str(""), "Only jobs with this unique key."),
		param("query", "created_from", dateTime(""), "Only jobs enqueued at or after this time (RFC 3339)."),
		param("query", "created_before", dateTime(""), "Only jobs enqueued before this time."),
		param("query", "run_at_from", dateTime(""), "Only jobs due at or after this time."),
		param("query", "run_at_before", dateTime(""), "Only jobs due before this time."),
		param("query", "tags", str(""), "Only jobs carrying every one of these tags, comma-separated (or repeated); a tag holding a comma can be selected only in a bulk action's body."),
		param("query", "any_tag", boolean(""), "true: jobs carrying at least one of tags instead; it needs tags."),
		param("query", "metadata.{key}", str(""), "Only jobs whose metadata has the key {key} with this string value, "+
			"e.g. metadata.tenant=acme; one parameter per key. A number or nested value never matches."),
		param("query", "keys", str(""), "Only jobs with one of these keys, comma-separated (or repeated); a key holding a comma can be selected only in a bulk action's body."),
		param("query", "group_ids", str(""), "Only the jobs of these workflows and batches (their IDs), comma-separated (or repeated)."),
		param("query", "payload.{path}", str(""), "Only jobs whose payload holds this value at {path}, keys joined by dots "+
			"(payload.customer.id=42); one parameter per path, at most 8, each of at most 8 keys of 1 to 64 letters, "+
			"digits, _ or -. The value is read as JSON when it is a string, number, true, false or null (42 is a number, "+
			"\"42\" a string), else as a string; it matches an equal string, a number of equal value, or the same true, "+
			"false or null. No index serves it. A malformed path, or a topic the client encrypts, is invalid_filter."),
		param("query", "limit", integer(""), "The most jobs to return: default 100, at most 10,000."),
		param("query", "offset", integer(""), "Skip this many selected jobs; not with cursor."),
		param("query", "cursor", str(""), "The next_cursor of the previous page, of the same order."),
		param("query", "order", enum("", "oldest", "newest"), "oldest (the default) or newest first; jobs are ordered by ID, which is creation order."),
	}
}

// content is a body of one media type and schema.
func content(mediaType string, schema obj) obj {
	return obj{mediaType: obj{"schema": schema}}
}

func response(description, schemaName string) obj {
	return obj{"description": description, "content": content("application/json", ref(schemaName))}
}

func problemResponse(description string) obj {
	return obj{"description": description, "content": content("application/problem+json", ref("Problem"))}
}

// operation is one operation with the responses every operation has: a
// problem for anything else (401, 403, 405, 500, 503).
func operation(id, summary string, params []obj, body string, responses obj) obj {
	responses["default"] = problemResponse("A problem: unauthorized (401), forbidden, read_only or cross_origin (403), " +
		"method_not_allowed (405), internal (500), unavailable (503).")
	op := obj{"operationId": id, "summary": summary, "responses": responses}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if body != "" {
		op["requestBody"] = obj{"required": true, "content": content("application/json", ref(body)),
			"description": "One JSON object in valid UTF-8, sent as application/json: no member twice in any object " +
				"(names equal under case folding, such as user and User, count as one), no unknown member, " +
				"nothing after the object."}
		responses["415"] = problemResponse("unsupported_media_type: the body is not sent as application/json " +
			"(a charset, if named, must be UTF-8).")
	}
	return op
}

// oneJob returns the responses of an action on one job.
func oneJob(ok obj) obj {
	return obj{
		"200": ok,
		"400": problemResponse("invalid_request: the ID is not a UUID."),
		"404": problemResponse("not_found: no job has the ID."),
		"409": problemResponse("status_conflict: the job's status does not allow the action (job_status says it)."),
	}
}

// withKeyProblems documents, beside the 400 of responses, the problems of
// a Sluice-Payload-Key header.
func withKeyProblems(responses obj) obj {
	responses["400"] = problemResponse("invalid_request: the ID is not a UUID; invalid_key: the " + PayloadKeyHeader +
		" header is malformed or its key not 16, 24 or 32 bytes; unknown_key: the payload is encrypted with another key, " +
		"or does not decrypt with this one.")
	return responses
}

// queueParam is the queue of a queue action, and queueAction its responses.
var (
	queueParam  = param("path", "name", str(""), "The queue's name: 1 to 128 letters, digits, or _ . : -")
	queueAction = obj{
		"200": response("The queue's state after the change.", "QueueState"),
		"400": problemResponse("invalid_request: the name is not a queue name."),
	}
)

// openAPIDocument returns the document.
func openAPIDocument() obj {
	enqueue := func(id string) obj {
		return operation(id, "Enqueue a job by topic and JSON payload", nil, "EnqueueRequest", obj{
			"201": response("The job was enqueued.", "EnqueueResponse"),
			"200": response("A pending or processing job has the unique key: it is returned, with duplicate true, and nothing is enqueued.", "EnqueueResponse"),
			"400": problemResponse("invalid_request (malformed body, unknown member, bad time, duration or option), " +
				"invalid_payload, unknown_topic or unknown_queue."),
			"413": problemResponse("payload_too_large: the payload or the body is over the client's limit."),
		})
	}
	paths := obj{
		"/api/jobs": obj{
			"get": operation("listJobs", "List jobs", listParameters(), "", obj{
				"200": response("One page.", "JobList"),
				"400": problemResponse("invalid_filter: an unknown or malformed parameter, or one out of range."),
			}),
			"post": enqueue("enqueueJob"),
		},
		"/api/jobs/enqueue": obj{"post": enqueue("enqueueJobAlias")},
		"/api/jobs/stats": obj{"get": operation("getStats", "Count jobs and sum up recent outcomes", []obj{
			topicsList, queuesList,
			param("query", "window", str(""), "How far back the outcome figures look, a Go duration; default 1h."),
			param("query", "bucket", str(""), "The width of each point of series, a Go duration of at least 1s; default 1m; at most 10,000 points."),
		}, "", obj{
			"200": response("The figures.", "Stats"),
			"400": problemResponse("invalid_filter."),
		})},
		"/api/jobs/{id}": obj{
			"get": operation("getJob", "Get a job with its payload, result, progress, attempts and logs",
				[]obj{idParam, param("header", PayloadKeyHeader, str(""), "A key, \"<key ID>:<key in standard base64>\": "+
					"the job's payload, if that key encrypted it, is answered decrypted (with Cache-Control: no-store). "+
					"Without it an encrypted payload is answered as stored: {\"sluice_sealed\": \"v1\", \"key\": ..., \"data\": ...}.")},
				"", withKeyProblems(oneJob(response("The job.", "JobDetail")))),
			"delete": operation("deleteJob", "Delete a job that is not processing", []obj{idParam}, "", oneJob(response("The job as it was.", "JobResponse"))),
		},
		"/api/jobs/{id}/explain": obj{"get": operation("explainJob", "Say what holds a job", []obj{idParam}, "", oneJob(response("The explanation.", "Explanation")))},
		"/api/metrics": obj{"get": operation("getMetrics", "Per topic over a window: attempts completed and failed, the failure "+
			"rate and duration percentiles, in all and per bucket, from the metrics store", []obj{
			topicsList,
			param("query", "window", str(""), "How far back: a Go duration of whole minutes (default 1h), at most the store's keep (8 days by default)."),
			param("query", "bucket", str(""), "The series' bucket: whole minutes (default the window over 60, rounded up to a minute)."),
		}, "", obj{"200": response("The metrics.", "Metrics"),
			"400": problemResponse("invalid_filter: a window or bucket that is not whole minutes, a window longer than the store keeps.")})},
		"/api/settings": obj{"get": operation("getSettings", "What the dashboard adapts to: read-only, the topics that may be "+
			"enqueued, the client's worker topics and its payload limit", nil, "", obj{"200": response("The settings.", "Settings")})},
		"/api/queues": obj{"get": operation("listQueues", "List queues with their jobs by status and the clients online working them", nil, "", obj{"200": response("The queues.", "QueueList")})},
		"/api/queues/{name}/pause": obj{"post": operation("pauseQueue", "Pause a queue: no client on the database starts its jobs "+
			"from its next claim; running jobs finish", []obj{queueParam}, "", queueAction)},
		"/api/queues/{name}/resume": obj{"post": operation("resumeQueue", "Resume a paused queue", []obj{queueParam}, "", queueAction)},
		"/api/clients":              obj{"get": operation("listClients", "List the clients recorded in the database", nil, "", obj{"200": response("The clients.", "ClientList")})},
		"/api/events": obj{"get": operation("streamEvents", "Stream job changes as Server-Sent Events", []obj{
			param("query", "ids", str(""), "Only changes of these jobs, comma-separated (or repeated)."),
			topicsList,
			param("query", "last_event_id", str(""), "Resume after this event's id, for clients that cannot send the Last-Event-ID header."),
			param("header", "Last-Event-ID", str(""), "Resume after this event's id: the events since are sent first, or a reset event if they are gone."),
		}, "", obj{
			"200": obj{"description": "An event stream: events named job, resync and reset, each with an id and a JSON data " +
				"object of the schema Change; events named log, without an id, with a LogEvent; a comment every 15 s when idle. " +
				"A reader that falls behind has the events waiting for it dropped and gets a reset event: refetch.",
				"content": content("text/event-stream", str("")), "x-event-data": ref("Change"), "x-log-event-data": ref("LogEvent")},
			"400": problemResponse("invalid_filter: an unknown parameter, or an ID that is not a UUID."),
		})},
		"/api/openapi.json": obj{"get": operation("getOpenAPI", "This document", nil, "", obj{
			"200": obj{"description": "The OpenAPI 3.1 document.", "content": content("application/json", typed("object", ""))},
		})},
	}
	for _, a := range []struct{ name, one, many string }{
		{"cancel", "Cancel a pending or processing job", "Cancel every pending and processing job the filter selects"},
		{"requeue", "Make a failed or cancelled job pending again, with fresh retries", "Requeue every failed and cancelled job the filter selects"},
		{"retry", "Make a pending job that waits for a later run_at due now", "Make every such pending job the filter selects due now"},
		{"delete", "", "Delete every job the filter selects but processing ones"},
	} {
		title := strings.ToUpper(a.name[:1]) + a.name[1:]
		if a.one != "" {
			paths["/api/jobs/{id}/"+a.name] = obj{"post": operation(a.name+"Job", a.one, []obj{idParam}, "",
				oneJob(response("The job as it is now.", "JobResponse")))}
		}
		paths["/api/jobs/"+a.name] = obj{"post": operation(a.name+"Jobs", a.many, nil, "Filter", obj{
			"200": response("The jobs changed.", "BulkResponse"),
			"400": problemResponse("invalid_filter: a malformed member, or an empty filter (" + title + " refuses to act on every job)."),
		})}
	}
	maps.Copy(paths, schedulePaths())
	maps.Copy(paths, limitPaths())
	maps.Copy(paths, groupPaths())
	return obj{
		"openapi": "3.1.0",
		"info": obj{
			"title":   "sluice",
			"version": "1",
			"description": "The jobs of a sluice queue. Paths are relative to where the handler is mounted. " +
				"Every request is authorized by the embedding service. Errors are application/problem+json " +
				"with a stable code member.",
		},
		"servers":    []obj{{"url": ".."}},
		"paths":      paths,
		"components": obj{"schemas": schemas()},
	}
}
