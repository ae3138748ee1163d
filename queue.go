package sluice

// QueueDefault is the queue a job goes to when its options name none.
const QueueDefault = "default"

// QueueConfig configures one named queue of a client.
type QueueConfig struct {
	// MaxWorkers is how many of the queue's jobs this client works at once.
	// 0 names a queue the client enqueues into but does not work; a client
	// with workers needs at least one queue with MaxWorkers >= 1. Default 10
	// for the default queue when Config.Queues is nil.
	MaxWorkers int
}
