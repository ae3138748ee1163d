// Package sluiceweb serves a sluice client's jobs over HTTP, for operators
// who do not write Go and for programs in other languages: a JSON API, a
// stream of job changes as Server-Sent Events, an OpenAPI 3.1 document of
// both, and a dashboard. Any Go service mounts it, under any prefix:
//
//	h, err := sluiceweb.New(client, &sluiceweb.Options{Authorize: authorize})
//	if err != nil {
//		return err
//	}
//	mux.Handle("/sluice/", http.StripPrefix("/sluice", h))
//	srv.RegisterOnShutdown(h.Close) // ends the event streams on Shutdown
//
// The API, relative to the mount point:
//
//	POST   api/jobs                   enqueue a job by topic and JSON payload, with tags and metadata
//	                                  (also api/jobs/enqueue)
//	GET    api/jobs                   list jobs: filters (tags, metadata, payload values too), cursor or
//	                                  offset pages, order, total
//	GET    api/jobs/stats             counts by status, topic and queue; outcomes per minute
//	GET    api/jobs/{id}              a job, with its payload (decrypted with a Sluice-Payload-Key),
//	                                  result, progress, attempts and logs
//	GET    api/jobs/{id}/explain      what holds a job, in words
//	POST   api/jobs/{id}/cancel       cancel a job (also requeue, retry)
//	DELETE api/jobs/{id}              delete a job
//	POST   api/jobs/cancel            cancel every job a filter selects (also requeue, retry, delete)
//	GET    api/queues                 each queue's jobs and the clients online working it
//	GET    api/clients                the clients recorded in the database
//	GET    api/metrics                per topic over a window: attempts, failure rate, p50/p95/p99 durations
//	GET    api/settings               what the dashboard adapts to: read-only, allowed topics, worker topics
//	GET    api/schedules              the stored schedules; POST creates one
//	GET    api/schedules/{name}       a schedule, with its next and last runs; PUT replaces, DELETE deletes it
//	GET    api/events                 Server-Sent Events of job changes made by any process, and of the
//	                                  records this process's workers log
//	GET    api/openapi.json           the OpenAPI 3.1 document of all of the above
//
// Errors are application/problem+json (RFC 9457) with a stable "code"
// member (see the Code constants). Every request is authorized by
// Options.Authorize, which is required; state-changing requests from
// browsers of other origins are refused (net/http.CrossOriginProtection)
// unless Options.TrustedOrigins lists them. docs/web.md in the repository
// tells the whole story.
package sluiceweb
