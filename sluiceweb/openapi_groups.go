package sluiceweb

// The parts of the OpenAPI document about workflows and batches.

import "maps"

// groupPaths are the operations on workflows and batches.
func groupPaths() obj {
	paths := obj{}
	for _, k := range []struct{ plural, one, param string }{
		{"workflows", "workflow", "The workflow's ID."},
		{"batches", "batch", "The batch's ID."},
	} {
		id := param("path", "id", uuidString(""), k.param)
		notFound := problemResponse("not_found: no " + k.one + " has the ID.")
		badID := problemResponse("invalid_request: the ID is not a UUID.")
		title := map[string]string{"workflows": "Workflow", "batches": "Batch"}[k.plural]
		paths["/api/"+k.plural] = obj{
			"get": operation("list"+title+"s", "List "+k.plural+", newest first, with their jobs' counts by status", []obj{
				param("query", "name", str(""), "Only "+k.plural+" of this name."),
				param("query", "statuses", str(""), "Only "+k.plural+" with one of these statuses, comma-separated (or repeated): open, running, completed, failed."),
				param("query", "created_from", dateTime(""), "Only those created at or after this time (RFC 3339)."),
				param("query", "created_before", dateTime(""), "Only those created before this time."),
				param("query", "limit", integer(""), "The most to return: default 100, at most 10,000."),
				param("query", "cursor", str(""), "The next_cursor of the previous page."),
			}, "", obj{
				"200": response("One page.", "GroupList"),
				"400": problemResponse("invalid_filter: an unknown or malformed parameter, an unknown status, a limit out of range."),
			}),
		}
		paths["/api/"+k.plural+"/{id}"] = obj{
			"get": operation("get"+title, "Get a "+k.one+" with its jobs, their counts by status, and its callbacks", []obj{id}, "", obj{
				"200": response("The "+k.one+".", "GroupDetail"),
				"400": badID,
				"404": notFound,
			}),
		}
		paths["/api/"+k.plural+"/{id}/cancel"] = obj{
			"post": operation("cancel"+title, "Cancel a "+k.one+": its pending and waiting jobs never run, its running ones are "+
				"told to stop; a "+k.one+" closed is then done and its callbacks on failure and on completion are enqueued", []obj{id}, "", obj{
				"200": response("The jobs cancelled.", "BulkResponse"),
				"400": badID,
				"404": notFound,
			}),
		}
		paths["/api/"+k.plural+"/{id}/retry"] = obj{
			"post": operation("retry"+title, "Retry a "+k.one+": its failed and cancelled jobs run again with a fresh retry budget "+
				"(in a workflow, cancelled tasks after others wait for them again), and its callbacks are enqueued again once it is done again",
				[]obj{id}, "", obj{
					"200": response("The jobs changed.", "BulkResponse"),
					"400": badID,
					"404": notFound,
				}),
		}
	}
	enqueueProblems := func(code, what string) obj {
		return obj{
			"400": problemResponse(code + " (field names the member: " + what + "), invalid_request (a malformed body, an unknown or " +
				"ill-typed member, a job's bad time, duration or option, field naming it within its job: tasks[3].queue), " +
				"or a job's invalid_payload, unknown_topic or unknown_queue (field: jobs[0].payload)."),
			"413": problemResponse("payload_too_large: a job's payload is over the client's limit (field names it), or the body is over 16 MiB " +
				"(or the limit of a job's body, if more)."),
		}
	}
	wf := enqueueProblems(CodeInvalidWorkflow, "no task or more than 10,000, a task without a name or with another's, "+
		"an after that names no task (tasks[3].after[0]), a cycle, a task with a unique key or depends_on, a callback with either")
	wf["201"] = response("The workflow was enqueued, atomically; Location names it.", "EnqueuedGroup")
	paths["/api/workflows"].(obj)["post"] = operation("enqueueWorkflow",
		"Enqueue a workflow: named tasks, each a job that runs once the tasks it comes after have completed, and callbacks", nil,
		"WorkflowRequest", wf)
	b := enqueueProblems(CodeInvalidBatch, "no job unless kept open, more than 10,000, a job with a unique key, a callback with a unique key or depends_on")
	b["201"] = response("The batch was enqueued, atomically; Location names it.", "EnqueuedGroup")
	paths["/api/batches"].(obj)["post"] = operation("enqueueBatch",
		"Enqueue a batch: jobs watched as one, with callbacks enqueued when they are all done", nil, "BatchRequest", b)
	batchID := param("path", "id", uuidString(""), "The batch's ID.")
	add := enqueueProblems(CodeInvalidBatch, "no job, more than 10,000, a job with a unique key")
	add["201"] = response("The jobs were added, atomically with the check that the batch is open.", "BulkResponse")
	add["404"] = problemResponse("not_found: no batch has the ID.")
	add["409"] = problemResponse("batch_closed: the batch is closed.")
	paths["/api/batches/{id}/jobs"] = obj{"post": operation("addToBatch", "Add jobs to a batch kept open", []obj{batchID}, "AddJobsRequest", add)}
	paths["/api/batches/{id}/close"] = obj{"post": operation("closeBatch",
		"Close a batch kept open: it is done, and its callbacks enqueued, once none of its jobs is pending or running; "+
			"closing a closed batch changes nothing", []obj{batchID}, "", obj{
			"200": response("The batch as it is once closed.", "GroupDetail"),
			"400": problemResponse("invalid_request: the ID is not a UUID."),
			"404": problemResponse("not_found: no batch has the ID."),
		})}
	return paths
}

// groupProperties are the members of a workflow or batch.
func groupProperties() obj {
	return obj{
		"id":          uuidString("Its ID: each of its jobs' group_id."),
		"kind":        enum("A workflow or a batch.", "workflow", "batch"),
		"name":        str("Its name: a label to find it by, not unique."),
		"created_at":  dateTime("When it was enqueued."),
		"status":      enum("open: a batch kept open; running: a job of it is pending or processing; completed: every job of it completed; failed: none is live, and one failed for good or was cancelled.", "open", "running", "completed", "failed"),
		"counts":      mapOf(integer(""), "Its jobs by status; statuses without jobs are absent."),
		"started_at":  dateTime("When its first job started; absent before."),
		"finished_at": dateTime("When its last job finished; absent while one is live."),
		"settled_at":  dateTime("When it was found done and its callbacks enqueued; absent until then, and again after a retry."),
		"outcome":     enum("How it ended, once settled: success when every job completed, failure otherwise.", "success", "failure"),
	}
}

var groupRequired = []string{"id", "kind", "name", "created_at", "status", "counts"}

// groupJobProperties are the members of a job of a workflow or batch, or
// of a callback: those of an enqueue, with what a job of a group cannot
// have said.
func groupJobProperties(what string) obj {
	props := enqueueProperties()
	props["unique_key"] = str("Refused: " + what + " has no unique key.")
	return props
}

// groupSchemas are the schemas of workflows and batches.
func groupSchemas() obj {
	detail := groupProperties()
	detail["jobs"] = array(ref("Job"), "Its jobs, oldest first: a workflow's tasks (each with its task name), a batch's jobs.")
	detail["callbacks"] = array(ref("GroupCallback"), "Its callbacks: those on success, then on failure, then on completion.")
	task := groupJobProperties("a task")
	task["name"] = str("The task's name, unique in the workflow: 1 or more bytes of UTF-8 without NUL.")
	task["after"] = array(str(""), "The names of the tasks it comes after (at most 100): it runs once every one of them completed.")
	task["depends_on"] = array(str(""), "Refused: a task depends on the tasks it comes after (after).")
	task["on_dependency_failure"] = enum("What a task it comes after that fails for good or is cancelled does to it: cancel it (the default) or run it anyway once every one is final.",
		"cancel", "run")
	callbacks := obj{
		"on_success":  array(ref("GroupJob"), "Jobs enqueued once every job completed."),
		"on_failure":  array(ref("GroupJob"), "Jobs enqueued once no job is pending or running and one failed for good or was cancelled."),
		"on_complete": array(ref("GroupJob"), "Jobs enqueued once no job is pending or running, whatever their outcomes."),
	}
	workflow := obj{
		"name":  str("The workflow's name: a label, not unique; UTF-8 without NUL."),
		"tasks": array(ref("Task"), "Its tasks, 1 to 10,000."),
	}
	maps.Copy(workflow, callbacks)
	batch := obj{
		"name":      str("The batch's name: a label, not unique; UTF-8 without NUL."),
		"jobs":      array(ref("GroupJob"), "Its jobs, up to 10,000; at least one unless keep_open."),
		"keep_open": boolean("Let jobs be added (POST api/batches/{id}/jobs) until it is closed (POST api/batches/{id}/close); its callbacks wait for the close."),
	}
	maps.Copy(batch, callbacks)
	return obj{
		"Group":       object("A workflow or a batch, with its jobs' counts by status.", groupProperties(), groupRequired...),
		"GroupDetail": object("A workflow or a batch with its jobs and callbacks.", detail, append([]string{"jobs", "callbacks"}, groupRequired...)...),
		"GroupList": object("One page of workflows or batches.", obj{
			"items":       array(ref("Group"), "Newest first."),
			"next_cursor": str("Pass as cursor to get the next page; absent on the last (a full page may be followed by an empty one)."),
		}, "items"),
		"GroupCallback": object("A callback of a workflow or batch.", obj{
			"on":     enum("When it is enqueued.", "success", "failure", "complete"),
			"topic":  str("Its job's topic."),
			"job_id": uuidString("The ID its job has once enqueued (a retry gives it a new one)."),
			"job":    ref("Job"),
		}, "on", "topic", "job_id"),
		"Task": object("A task of a workflow: a job as POST api/jobs takes it, its name, and the tasks it comes after.", task, "name", "topic"),
		"GroupJob": object("A job of a batch, or a callback: a job as POST api/jobs takes it. A callback has neither "+
			"unique_key nor depends_on; a batch's job may depend on jobs outside the batch.", groupJobProperties("a job of a batch or a callback"), "topic"),
		"WorkflowRequest": object("A workflow to enqueue: its tasks and callbacks.", workflow, "tasks"),
		"BatchRequest":    object("A batch to enqueue: its jobs and callbacks.", batch),
		"AddJobsRequest": object("Jobs to add to a batch kept open.", obj{
			"jobs": array(ref("GroupJob"), "The jobs, 1 to 10,000."),
		}, "jobs"),
		"EnqueuedGroup": object("A workflow or batch enqueued.", obj{
			"id":   uuidString("Its ID."),
			"kind": enum("", "workflow", "batch"),
			"name": str("Its name."),
			"jobs": array(ref("Job"), "Its jobs as stored, in the order of the body."),
		}, "id", "kind", "name", "jobs"),
	}
}
