package sluiceweb

// The parts of the OpenAPI document about keys and the limits of queues
// and topics.

// limitPaths are the operations on limits and on the keys of a queue.
func limitPaths() obj {
	invalid := problemResponse("invalid_request (field names the member: a malformed body, an unknown or " +
		"ill-typed member, a malformed duration, a limit out of range, a rate without its period or the other " +
		"way round, a key that is empty, too long or given twice, fair for a topic, an unknown sequence policy, " +
		"or a name that is not a queue's or a topic's).")
	changed := response("The scope's limits as stored. Every client on the database obeys them within its poll interval.", "Limits")
	return obj{
		"/api/limits": obj{"get": operation("listLimits", "List the stored limits of every queue and topic that has any", nil, "", obj{
			"200": response("The limits, queues first, then topics, each by name.", "LimitsList"),
			"400": problemResponse("invalid_filter: a query parameter (there are none)."),
		})},
		"/api/limits/{kind}/{name}/keys": obj{"put": operation("setKeyLimits",
			"Replace the limits of each key of a queue or a topic, its sequence policy, fairness and the keys' overrides; "+
				"an empty object removes them. A topic's own limits are kept.",
			[]obj{
				param("path", "kind", enum("", "queue", "topic"), "What the limits apply to: the jobs of a queue, or of a topic in whatever queue."),
				param("path", "name", str(""), "The queue's or the topic's name."),
			}, "KeyLimits", obj{"200": changed, "400": invalid})},
		"/api/limits/topic/{name}": obj{"put": operation("setTopicLimits",
			"Replace the limits of all the jobs of a topic, in whatever queue; an empty object removes them. "+
				"The topic's key limits are kept.",
			[]obj{param("path", "name", str(""), "The topic.")}, "TopicLimits", obj{"200": changed, "400": invalid})},
		"/api/queues/{name}/keys": obj{"get": operation("listQueueKeys",
			"List the keys of a queue's pending and processing jobs, with how many of each", []obj{
				queueParam,
				param("query", "limit", integer(""), "The most keys to return, those with the most jobs first: default 100, at most 10,000."),
			}, "", obj{
				"200": response("The keys, those with the most jobs first.", "KeyCountList"),
				"400": problemResponse("invalid_filter: an unknown parameter, or a limit out of range."),
			})},
	}
}

// rateProperties are the members of a limit on how many jobs run and
// start, with the prefix of their descriptions.
func rateProperties(of string) obj {
	return obj{
		"max_running": integer("How many " + of + " may run at once, across every client; absent or 0: no limit."),
		"rate_limit":  integer("How many " + of + " may start per rate_period, across every client; absent or 0: no limit."),
		"rate_period": str("The period of rate_limit, a Go duration such as 1s, 1m or 1h30m; given with rate_limit only."),
	}
}

// limitSchemas are the schemas of limits and keys.
func limitSchemas() obj {
	keyLimits := rateProperties("jobs of each key")
	keyLimits["sequence"] = enum("Puts the scope's jobs enqueued with a key and no sequence of their own in the sequence of their key: "+
		"hold holds the rest of a sequence behind a job that failed for good, continue goes on past it.", "hold", "continue")
	keyLimits["fair"] = boolean("Claims of the queue take due jobs round-robin across keys, each key as many per turn as its weight; for a queue only.")
	keyLimits["keys"] = array(ref("KeyLimit"), "The keys whose limits or weight differ from the defaults above, each once; sorted by key in answers.")
	keyLimit := rateProperties("of the key's jobs")
	keyLimit["key"] = str("The key: 1 to 255 bytes of UTF-8 without NUL.")
	keyLimit["weight"] = integer("How many of the key's jobs a fair claim takes per turn: 1 to 1000; absent or 0 is 1.")
	limits := rateProperties("of the topic's jobs")
	limits["kind"] = enum("What the limits apply to.", "queue", "topic")
	limits["name"] = str("The queue's or the topic's name.")
	limits["key_limits"] = ref("KeyLimits")
	limits["updated_at"] = dateTime("When the limits last changed.")
	return obj{
		"KeyLimits": object("The limits of each key of a queue or a topic; a member left out sets no limit.", keyLimits),
		"KeyLimit":  object("One key's limits, in place of its scope's defaults; a member left out takes the default.", keyLimit, "key"),
		"TopicLimits": object("The limits of all the jobs of a topic, in whatever queue; a member left out sets no limit.",
			rateProperties("of the topic's jobs")),
		"Limits": object("The stored limits of a queue or a topic. max_running, rate_limit and rate_period are a topic's own "+
			"(a queue's own are its state: api/queues).", limits, "kind", "name", "key_limits", "updated_at"),
		"LimitsList": object("The stored limits.", obj{"items": array(ref("Limits"), "Queues first, then topics, each by name.")}, "items"),
		"KeyCount": object("How many of a queue's jobs with one key wait and run.", obj{
			"key":        str("The key."),
			"pending":    integer("Its pending jobs."),
			"processing": integer("Its processing jobs."),
		}, "key", "pending", "processing"),
		"KeyCountList": object("The keys of a queue's jobs.", obj{"items": array(ref("KeyCount"), "Those with the most jobs first.")}, "items"),
	}
}
