package sluiceweb

import "maps"

// The schemas of the OpenAPI document, in the subset of JSON Schema it
// uses: type (a name, or a list of names for a value that may be null),
// properties, required, additionalProperties, items, enum, format and
// $ref.

// obj is a JSON object of the document.
type obj = map[string]any

func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

func typed(t string, description string) obj {
	o := obj{"type": t}
	if description != "" {
		o["description"] = description
	}
	return o
}

func str(description string) obj     { return typed("string", description) }
func integer(description string) obj { return typed("integer", description) }
func number(description string) obj  { return typed("number", description) }
func boolean(description string) obj { return typed("boolean", description) }

// orNull returns o, a typed schema, allowing null too.
func orNull(o obj) obj {
	o["type"] = []string{o["type"].(string), "null"}
	return o
}

func dateTime(description string) obj {
	o := str(description)
	o["format"] = "date-time"
	return o
}

func uuidString(description string) obj {
	o := str(description)
	o["format"] = "uuid"
	return o
}

func enum(description string, values ...string) obj {
	o := str(description)
	o["enum"] = values
	return o
}

func array(items obj, description string) obj {
	o := typed("array", description)
	o["items"] = items
	return o
}

// object is an object with the given properties, of which required are
// always there, and no others.
func object(description string, props obj, required ...string) obj {
	o := typed("object", description)
	o["properties"] = props
	o["additionalProperties"] = false
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// mapOf is an object whose members all have the schema of values.
func mapOf(values obj, description string) obj {
	o := typed("object", description)
	o["additionalProperties"] = values
	return o
}

// anyJSON is any JSON value.
func anyJSON(description string) obj { return obj{"description": description} }

var statusNames = []string{"pending", "processing", "completed", "failed", "cancelled"}

// jobProperties are the members of a job (sluice.JobRow).
func jobProperties() obj {
	return obj{
		"id":           uuidString("The job's ID, a version 7 UUID: IDs sort by creation time."),
		"topic":        str("The job's type; it selects its worker."),
		"queue":        str("The queue the job waits in."),
		"priority":     integer("Orders jobs within a queue: smaller first."),
		"payload":      anyJSON("The job's arguments, as JSON."),
		"status":       ref("Status"),
		"attempt":      integer("How many times the job was claimed; 0 before its first run."),
		"max_retries":  integer("How many retries the job may have after its first attempt."),
		"run_at":       dateTime("When the job may run next."),
		"created_at":   dateTime("When the job was enqueued."),
		"attempted_at": dateTime("When the latest attempt was claimed; absent before the first."),
		"attempted_by": str("The client that claimed the latest attempt."),
		"finalized_at": dateTime("When the job reached a final status."),
		"locked_until": dateTime("When the running attempt's lease ends."),
		"locked_by":    str("The client running the job."),
		"unique_key":   str("At most one pending or processing job has this key."),
		"errors":       array(ref("AttemptError"), "The errors of earlier attempts, oldest first (at most 20)."),
		"result":       anyJSON("The JSON the worker stored when it completed the job."),
		"progress":     ref("Progress"),
		"tags":         array(str(""), "The job's tags, in order; absent when none."),
		"metadata":     typed("object", "The JSON object the job was enqueued with; absent when none."),
		"depends_on":   array(str(""), "The IDs of the jobs it was enqueued to wait for; absent when none."),
		"waiting":      boolean("True while it waits for them (it is pending, and no client starts it); absent otherwise."),
		"key":          str("The job's key: the customer, account or order its limits per key count it under; absent when none."),
		"sequence":     enum("Puts the job in the sequence of its key in its queue: its jobs run one at a time, in order. hold holds the rest behind a job that failed for good, continue goes on past it. Absent when the job is in no sequence.", "hold", "continue"),
		"group_id":     uuidString("The workflow or batch the job is a job of; absent when none."),
		"task":         str("The job's task name in its workflow; absent when it is no task."),
		"callback_of":  uuidString("The workflow or batch whose callback the job is; absent when none."),
	}
}

var jobRequired = []string{"id", "topic", "queue", "priority", "payload", "status", "attempt", "max_retries", "run_at", "created_at"}

// filterProperties are the members of a bulk action's filter.
func filterProperties() obj {
	return obj{
		"topics":         array(str(""), "Jobs of one of these topics."),
		"statuses":       array(ref("Status"), "Jobs with one of these statuses."),
		"queues":         array(str(""), "Jobs in one of these queues."),
		"unique_key":     str("Jobs with this unique key."),
		"created_from":   dateTime("Jobs enqueued at or after this time."),
		"created_before": dateTime("Jobs enqueued before this time."),
		"run_at_from":    dateTime("Jobs due at or after this time."),
		"run_at_before":  dateTime("Jobs due before this time."),
		"tags":           array(str(""), "Jobs carrying every one of these tags (one of them, with any_tag)."),
		"any_tag":        boolean("Select jobs carrying at least one of tags; it needs tags."),
		"metadata":       mapOf(str(""), "Jobs whose metadata has each of these keys with this string value."),
		"keys":           array(str(""), "Jobs with one of these keys."),
		"group_ids":      array(uuidString(""), "The jobs of these workflows and batches."),
		"payload": mapOf(anyJSON("A JSON string, number, true, false or null."),
			"Jobs whose payload holds each value at its path, keys joined by dots (customer.id); see payload.{path} of GET api/jobs."),
	}
}

// enqueueProperties are the members of a job to enqueue (POST api/jobs).
func enqueueProperties() obj {
	return obj{
		"topic":       str("The job's topic. A client with workers refuses a topic it has no worker for (unknown_topic)."),
		"payload":     anyJSON("The job's arguments, one JSON value; absent or null means {}. It must decode into the arguments of the topic's worker, unknown fields refused."),
		"run_at":      dateTime("When the job may run (RFC 3339); not with delay."),
		"delay":       str("How long from now the job waits, a Go duration such as 90s or 1h30m; not with run_at."),
		"queue":       str("The queue; default \"default\". It must be one the client knows."),
		"priority":    integer("Smaller runs first within the queue; -32768 to 32767; default 0."),
		"max_retries": integer("Retries after the first attempt; absent means the default (3), 0 none."),
		"unique_key":  str("While a pending or processing job has this key, enqueueing returns it (duplicate) instead."),
		"tags":        array(str(""), "Labels for finding the job: at most 32, each 1 to 128 bytes of UTF-8 without NUL; repeats dropped."),
		"metadata":    typed("object", "Data about the job, a JSON object of at most 64 KiB encoded; filter by its string values."),
		"depends_on":  array(str(""), "IDs of jobs (at most 100) this one waits for: it runs once every one of them completed."),
		"on_dependency_failure": enum("What a dependency that fails for good, is cancelled or is gone does: cancel this job (the default) or run it anyway once every dependency is final.",
			"cancel", "run"),
		"key": str("The job's key, 1 to 255 bytes of UTF-8 without NUL: the customer, account or order the limits per key of its queue and topic count it under."),
		"sequence": enum("Puts the job in the sequence of its key (it needs a key): hold or continue. Absent: the policy stored for its topic or queue, if any.",
			"hold", "continue"),
	}
}

// schemas are the document's components.
func schemas() obj {
	detail := jobProperties()
	detail["history"] = array(ref("Attempt"), "The job's attempts, oldest first: failed ones, and the latest if running or completed.")
	detail["logs"] = array(ref("JobLog"), "The records its workers logged, oldest first, across attempts: the newest, within the client's bounds.")
	detail["logs_dropped"] = integer("How many older records were dropped to stay within the bounds.")
	byStatus := mapOf(integer(""), "Jobs by status; statuses without jobs are absent.")
	all := obj{
		"Status":    enum("Where a job is in its life.", statusNames...),
		"Job":       object("A job.", jobProperties(), jobRequired...),
		"JobDetail": object("A job with its attempts and logs.", detail, append([]string{"history", "logs", "logs_dropped"}, jobRequired...)...),
		"AttemptError": object("The error of one attempt.", obj{
			"attempt":    integer("The attempt, from 1."),
			"at":         dateTime("When it failed."),
			"error":      str("The error's message."),
			"trace":      str("The stack of a panic."),
			"started_at": dateTime("When the attempt was claimed."),
			"client_id":  str("The client that ran it."),
		}, "attempt", "at", "error"),
		"Attempt": object("One attempt of a job.", obj{
			"attempt":    integer("The attempt, from 1."),
			"started_at": dateTime("When it was claimed."),
			"client_id":  str("The client that ran it."),
			"ended_at":   dateTime("When it ended; absent while it runs."),
			"error":      str("Its error, if it failed."),
			"trace":      str("The stack of a panic."),
		}, "attempt"),
		"Progress": object("The latest progress the job's worker reported.", obj{
			"attempt": integer("The attempt that reported it."),
			"percent": number("From 0 to 100."),
			"message": str("What the job was doing."),
			"at":      dateTime("When it was reported."),
		}, "attempt", "percent", "at"),
		"EnqueueRequest": object("A job to enqueue.", enqueueProperties(), "topic"),
		"EnqueueResponse": object("The job enqueued, or the live job with the same unique key.", obj{
			"job":       ref("Job"),
			"duplicate": boolean("True when nothing was enqueued because a live job has the unique key."),
		}, "job", "duplicate"),
		"JobResponse": object("One job.", obj{"job": ref("Job")}, "job"),
		"JobList": object("One page of jobs.", obj{
			"items":       array(ref("Job"), "The page's jobs, in the order asked for."),
			"total":       integer("How many jobs the filter selects, on every page."),
			"next_cursor": str("Pass as cursor to get the next page; absent on the last."),
		}, "items", "total"),
		"Filter": object("Selects jobs; every member given narrows the selection. A bulk action refuses an empty filter.",
			filterProperties()),
		"BulkResponse": object("The jobs a bulk action changed.", obj{
			"items": array(ref("Job"), "The changed jobs, as they are after the action (as they were, for delete)."),
			"count": integer("How many."),
		}, "items", "count"),
		"Stats": object("Counts and outcomes.", obj{
			"total":           integer("How many jobs the filter selects."),
			"by_status":       byStatus,
			"by_topic":        mapOf(byStatus, "Jobs by topic, then status."),
			"by_queue":        mapOf(byStatus, "Jobs by queue, then status."),
			"window_seconds":  number("The window of the outcome figures."),
			"completed":       integer("Jobs completed within the window."),
			"failed":          integer("Jobs failed for good within the window."),
			"success_rate":    orNull(number("completed / (completed + failed); null when both are 0: no outcomes, no rate.")),
			"avg_duration_ms": number("Mean run time of the completed jobs' last attempts."),
			"p95_duration_ms": number("95th percentile (nearest rank) of the same."),
			"bucket_seconds":  number("The width of each point of series."),
			"series":          array(ref("Point"), "Completed and failed per bucket over the window, oldest first, empty buckets included."),
		}, "total", "by_status", "by_topic", "by_queue", "window_seconds", "completed", "failed", "success_rate",
			"avg_duration_ms", "p95_duration_ms", "bucket_seconds", "series"),
		"Point": object("One bucket of time.", obj{
			"start":     dateTime("When the bucket starts (aligned on the Unix epoch)."),
			"completed": integer("Jobs completed in it."),
			"failed":    integer("Jobs failed for good in it."),
		}, "start", "completed", "failed"),
		"Explanation": object("What holds a job.", obj{
			"job": ref("Job"),
			"reason": enum("What holds it.", "finished", "scheduled", "backoff", "no_worker", "queue_busy", "free_worker", "running", "holder_silent",
				"waiting", "paused", "queue_limit", "sequence", "key_limit", "key_rate", "fair_share"),
			"text":  str("The same in a sentence."),
			"key":   str("The job's key, when the reason concerns it (sequence, key_limit, key_rate, fair_share)."),
			"ahead": uuidString("The job ahead of it in its sequence, for the reason sequence."),
		}, "job", "reason", "text"),
		"Metrics": object("Per topic over a window, from the metrics store.", obj{
			"from":           dateTime("The window's start."),
			"to":             dateTime("The window's end: the end of the current minute."),
			"bucket_seconds": number("The series' bucket, in seconds."),
			"topics":         array(ref("TopicMetrics"), "The topics with attempts in the window, sorted."),
		}, "from", "to", "bucket_seconds", "topics"),
		"TopicMetrics": object("What one topic's attempts did.", obj{
			"topic":        str("The topic."),
			"completed":    integer("Attempts that completed their job."),
			"failed":       integer("Attempts whose worker failed, retried or not."),
			"failure_rate": number("failed / (completed + failed); 0 with none."),
			"avg_ms":       number("The mean duration, in milliseconds."),
			"p50_ms":       number("The median duration (within a bucket's ratio, 1.5, of the exact one)."),
			"p95_ms":       number("The 95th percentile of durations."),
			"p99_ms":       number("The 99th percentile of durations."),
			"series":       array(ref("MetricsPoint"), "Per bucket, oldest first, every bucket of the window present."),
		}, "topic", "completed", "failed", "failure_rate", "avg_ms", "p50_ms", "p95_ms", "p99_ms", "series"),
		"MetricsPoint": object("One bucket of a topic's series.", obj{
			"start":     dateTime("When the bucket starts."),
			"completed": integer("Attempts that completed."),
			"failed":    integer("Attempts that failed."),
			"p50_ms":    number("The median duration."),
			"p95_ms":    number("The 95th percentile."),
			"p99_ms":    number("The 99th percentile."),
		}, "start", "completed", "failed", "p50_ms", "p95_ms", "p99_ms"),
		"Settings": object("What the dashboard adapts to.", obj{
			"read_only":         boolean("Options.ReadOnly: no enqueue nor action is allowed."),
			"allowed_topics":    array(str(""), "Options.AllowedTopics, sorted: the only topics that may be enqueued; empty when any may."),
			"topics":            array(str(""), "The topics the serving client has workers for, sorted; empty for an insert-only client."),
			"max_payload_bytes": integer("The largest payload the client enqueues, in bytes."),
		}, "read_only", "allowed_topics", "topics", "max_payload_bytes"),
		"QueueList": object("The queues.", obj{"items": array(ref("Queue"), "By name.")}, "items"),
		"Queue": object("One queue.", obj{
			"name":                str("The queue's name."),
			"counts":              byStatus,
			"total":               integer("Its jobs."),
			"clients":             integer("Clients online (seen within a minute) that work it."),
			"workers":             integer("How many of its jobs those clients work at once, in all."),
			"paused":              boolean("Whether it is paused: no client starts its jobs."),
			"max_running":         integer("How many of its jobs may run at once across every client; absent when unlimited."),
			"rate_limit":          integer("How many of its jobs may start per rate_period_seconds; absent when unlimited."),
			"rate_period_seconds": number("The period of rate_limit, in seconds."),
		}, "name", "counts", "total", "clients", "workers", "paused"),
		"QueueState": object("A queue's stored flow control.", obj{
			"queue":               str("The queue's name."),
			"paused":              boolean("Whether it is paused."),
			"max_running":         integer("How many of its jobs may run at once across every client; absent when unlimited."),
			"rate_limit":          integer("How many of its jobs may start per rate_period_seconds; absent when unlimited."),
			"rate_period_seconds": number("The period of rate_limit, in seconds."),
			"updated_at":          dateTime("When the state last changed."),
		}, "queue", "paused", "updated_at"),
		"ClientList": object("The recorded clients.", obj{"items": array(ref("Client"), "By ID.")}, "items"),
		"Client": object("A client as it records itself.", obj{
			"id":          str("Its ID, the locked_by of the jobs it runs."),
			"host":        str("Its host."),
			"pid":         integer("Its process ID."),
			"topics":      array(str(""), "The topics it has workers for."),
			"queues":      array(str(""), "The queues it works."),
			"max_workers": mapOf(integer(""), "How many jobs of each queue it works at once."),
			"started_at":  dateTime("When it started."),
			"seen_at":     dateTime("When it last recorded itself."),
			"online":      boolean("Whether it recorded itself within the last minute."),
		}, "id", "host", "pid", "topics", "queues", "started_at", "seen_at", "online"),
		"JobState": object("A job as the change feed reads it: no payload, errors or result.", obj{
			"id": uuidString(""), "topic": str(""), "queue": str(""), "status": ref("Status"),
			"attempt": integer(""), "max_retries": integer(""), "run_at": dateTime(""), "created_at": dateTime(""),
			"attempted_at": dateTime(""), "finalized_at": dateTime(""), "locked_by": str(""), "progress": ref("Progress"),
			"logged": integer("How many records its workers have logged, kept or dropped; absent for none. When it grows, fetch the job for its logs."),
		}, "id", "topic", "queue", "status", "attempt", "max_retries", "run_at", "created_at"),
		"Change": object("The data of an event of api/events.", obj{
			"id": str("The change's place in the feed, also the event's id."),
			"kind": enum("What happened; resync and reset have no job.", "enqueued", "started", "progressed", "logged", "retried",
				"requeued", "completed", "failed", "cancelled", "deleted", "resync", "reset"),
			"job": ref("JobState"),
			"at":  dateTime("When the feed saw it."),
		}, "id", "kind", "at"),
		"Problem": object("An error (RFC 9457).", obj{
			"type":   str("Always about:blank: code says what went wrong."),
			"title":  str("The HTTP status's text."),
			"status": integer("The HTTP status."),
			"detail": str("What went wrong, for people."),
			"code": enum("What went wrong, for programs.", CodeNotFound, CodeInvalidRequest, CodeInvalidFilter, CodeInvalidPayload, CodeUnsupportedMediaType,
				CodePayloadTooLarge, CodeUnknownTopic, CodeUnknownQueue, CodeStatusConflict, CodeInvalidSchedule,
				CodeDuplicateSchedule, CodeInvalidWorkflow, CodeInvalidBatch, CodeBatchClosed, CodeUnauthorized, CodeForbidden,
				CodeReadOnly, CodeCrossOrigin, CodeMethodNotAllowed, CodeUnavailable, CodeInvalidKey, CodeUnknownKey, CodeInternal),
			"field":      str("The request member or parameter at fault."),
			"job_status": ref("Status"),
		}, "type", "title", "status", "code"),
	}
	maps.Copy(all, scheduleSchemas())
	maps.Copy(all, limitSchemas())
	maps.Copy(all, groupSchemas())
	return all
}
