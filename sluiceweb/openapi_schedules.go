package sluiceweb

// The parts of the OpenAPI document about schedules and logs.

import "maps"

var nameParam = param("path", "name", str(""), "The schedule's name.")

// schedulePaths are the operations on schedules.
func schedulePaths() obj {
	notFound := problemResponse("not_found: no schedule has the name.")
	invalid := problemResponse("invalid_schedule (field names the member: an invalid cron expression, an unknown " +
		"time zone, a refused name, topic, payload, queue or option) or invalid_request (malformed body, unknown " +
		"or computed member).")
	return obj{
		"/api/schedules": obj{
			"get": operation("listSchedules", "List the stored schedules", nil, "", obj{
				"200": response("The schedules, by name.", "ScheduleList"),
				"400": problemResponse("invalid_filter: a query parameter (there are none)."),
			}),
			"post": operation("createSchedule", "Store a schedule that enqueues a job at every tick of a cron expression", nil,
				"ScheduleRequest", obj{
					"201": response("The schedule as stored, with next_run_at; Location names it.", "Schedule"),
					"400": invalid,
					"409": problemResponse("duplicate_schedule: another schedule has the name."),
					"413": problemResponse("payload_too_large: the body is over the limit."),
				}),
		},
		"/api/schedules/{name}": obj{
			"get": operation("getSchedule", "Get a stored schedule", []obj{nameParam}, "", obj{
				"200": response("The schedule.", "Schedule"),
				"404": notFound,
			}),
			"put": operation("updateSchedule", "Replace a stored schedule's definition", []obj{nameParam}, "ScheduleRequest", obj{
				"200": response("The schedule as stored. A new cron expression or time zone, or enabling it, "+
					"runs it from its first tick after now; otherwise its next tick stays.", "Schedule"),
				"400": problemResponse("invalid_schedule, or invalid_request (as for create, or a name other than the path's)."),
				"404": notFound,
				"413": problemResponse("payload_too_large: the body is over the limit."),
			}),
			"delete": operation("deleteSchedule", "Delete a stored schedule; the jobs it enqueued stay", []obj{nameParam}, "", obj{
				"200": response("The schedule as it was.", "Schedule"),
				"404": notFound,
			}),
		},
	}
}

// scheduleProperties are the members of a schedule's definition.
func scheduleProperties() obj {
	return obj{
		"name": str("Unique among schedules: 1 to 200 bytes of UTF-8 without NUL. In a PUT it may be left out; " +
			"if given it must be the path's."),
		"cron": str("When it fires: five fields (minute hour day-of-month month day-of-week), six with seconds " +
			"first, or a descriptor (@hourly, @daily, @weekly, @monthly, @yearly, @every 5m)."),
		"time_zone":   str("The IANA zone the cron expression is read in, such as Europe/Paris; empty is UTC."),
		"topic":       str("The topic of the jobs it enqueues. It needs no worker in the serving process."),
		"payload":     anyJSON("The jobs' arguments, one JSON value; absent or null is {}."),
		"queue":       str("The jobs' queue; default \"default\". It must be one the serving client knows."),
		"priority":    integer("The jobs' priority: smaller first; -32768 to 32767; default 0."),
		"max_retries": integer("The jobs' retries after their first attempt: absent is the default, 0 none."),
		"enabled":     boolean("Whether it runs; default true. Disabled, it has no next_run_at; enabled again, it runs from its next tick, missed ones not caught up."),
		"catch_up":    enum("What ticks missed while no client ran it do: once (the default) enqueues one job for the latest, skip none.", "once", "skip"),
	}
}

// scheduleSchemas are the schemas of schedules and of logs.
func scheduleSchemas() obj {
	stored := scheduleProperties()
	stored["next_run_at"] = dateTime("Its next tick; absent while disabled. A tick in the past is due.")
	stored["last_run_at"] = dateTime("The tick of the last job it enqueued; absent before the first.")
	stored["last_job_id"] = uuidString("That job's ID.")
	stored["created_at"] = dateTime("When it was created.")
	stored["updated_at"] = dateTime("When it was last created or replaced.")
	record := obj{
		"level":   str("slog's name of the level: DEBUG, INFO, WARN, ERROR, or one with an offset such as INFO+2."),
		"time":    dateTime("When it was logged, by the worker's clock."),
		"message": str("The message (at most 1 KiB)."),
		"attrs":   typed("object", "The attributes, groups nested; {} when none."),
	}
	jobLog := obj{"attempt": integer("The attempt that logged it.")}
	maps.Copy(jobLog, record)
	return obj{
		"Schedule": object("A stored schedule.", stored, "name", "cron", "time_zone", "topic", "payload", "queue",
			"priority", "enabled", "catch_up", "created_at", "updated_at"),
		"ScheduleRequest": object("A schedule's definition: the members a PUT leaves out take their defaults. "+
			"The computed members (next_run_at, last_run_at, last_job_id, created_at, updated_at) are refused.",
			scheduleProperties(), "cron", "topic"),
		"ScheduleList": object("The stored schedules.", obj{"items": array(ref("Schedule"), "By name.")}, "items"),
		"LogRecord":    object("A record a job's worker logged.", record, "level", "time", "message", "attrs"),
		"JobLog":       object("One of a job's records.", jobLog, "attempt", "level", "time", "message", "attrs"),
		"LogEvent": object("The data of an event named log: a record a worker of the serving process logged.", obj{
			"job_id":  uuidString("The job's ID."),
			"attempt": integer("The attempt that logged it."),
			"record":  ref("LogRecord"),
		}, "job_id", "attempt", "record"),
	}
}
