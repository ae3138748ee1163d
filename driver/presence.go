package driver

import "time"

// ClientRow is a client as it records itself: a process working jobs.
type ClientRow struct {
	// ID is the client's ID, the LockedBy of the jobs it holds.
	ID string `json:"id"`
	// Host and PID say where it runs.
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// Topics are the topics it has workers for; Queues the queues it
	// works.
	Topics []string `json:"topics"`
	Queues []string `json:"queues"`
	// MaxWorkers is how many jobs of each of its Queues it works at once,
	// by queue name. It is nil in the records of clients that did not
	// record their worker counts (earlier versions).
	MaxWorkers map[string]int `json:"max_workers,omitempty"`
	// StartedAt is when it started; SeenAt when it last recorded itself.
	StartedAt time.Time `json:"started_at"`
	SeenAt    time.Time `json:"seen_at"`
}

// ClientRecordParams are the params of [Executor.ClientRecord].
type ClientRecordParams struct {
	// Client is the record to store. A client already recorded keeps its
	// StartedAt; every other field is replaced.
	Client ClientRow
	// PruneBefore, when not zero, deletes the records of other clients
	// last seen before it: they are gone.
	PruneBefore time.Time
}

// ClientListParams are the params of [Executor.ClientList].
type ClientListParams struct {
	// SeenSince, when not zero, lists only clients seen at or after it.
	SeenSince time.Time
}

// ClientForgetParams are the params of [Executor.ClientForget].
type ClientForgetParams struct {
	// ID is the client whose record to delete.
	ID string
}
