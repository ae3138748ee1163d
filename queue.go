package sluice

// QueueDefault is the queue a job goes to when its options name none.
const QueueDefault = "default"

// QueueConfig configures one named queue of a client.
type QueueConfig struct {
	// MaxWorkers is how many of the queue's jobs this client works at once.
	// It must be at least 1 for a client with workers; an insert-only
	// client may leave it 0 to name a queue it enqueues into but never
	// works. Default 10 for the default queue when Config.Queues is nil.
	MaxWorkers int
}
