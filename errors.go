package sluice

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// Sentinel errors. Each is returned wrapped with the operation that failed;
// test for them with errors.Is.
var (
	// ErrLeaseLost is returned by Ack and Nack when the client no longer
	// holds the job: its lease expired and it was taken back, it was
	// cancelled or deleted, or it was already finalized. Nothing was
	// changed; the caller should roll back its transaction.
	ErrLeaseLost = errors.New("sluice: job lease lost")

	// ErrPayloadTooLarge is returned when a job's JSON arguments exceed
	// Config.MaxPayloadBytes. Nothing is written.
	ErrPayloadTooLarge = errors.New("sluice: payload too large")

	// ErrEmptyTopic is returned when a job's Topic() is empty.
	ErrEmptyTopic = errors.New("sluice: empty topic")

	// ErrUnknownQueue is returned when a job is enqueued into a queue the
	// client's Config.Queues does not name.
	ErrUnknownQueue = errors.New("sluice: unknown queue")

	// ErrNilTx is returned by the Tx methods when given a nil transaction.
	ErrNilTx = errors.New("sluice: nil transaction")

	// ErrInvalidArgs is returned when job arguments are nil or cannot be
	// encoded as JSON. The error is an *ArgsError.
	ErrInvalidArgs = errors.New("sluice: invalid job args")

	// ErrNilError is returned by Nack when given a nil error: a failure
	// needs a reason.
	ErrNilError = errors.New("sluice: nack needs a non-nil error")

	// ErrInvalidOptions is returned for enqueue options out of range. The
	// error is an *OptionsError.
	ErrInvalidOptions = errors.New("sluice: invalid enqueue options")

	// ErrInvalidConfig is returned by NewClient for an invalid Config. The
	// error is a *ConfigError.
	ErrInvalidConfig = errors.New("sluice: invalid config")

	// ErrInvalidFilter is returned by List and Stats for a filter out of
	// range. The error is a *FilterError.
	ErrInvalidFilter = errors.New("sluice: invalid filter")

	// ErrStatusConflict is returned by Cancel, Requeue, Delete and
	// RetryNow when the job's status does not allow the action. The error
	// is a *StatusConflictError. Nothing was changed.
	ErrStatusConflict = errors.New("sluice: job status does not allow this")

	// ErrNotFound is returned when no job has the given ID.
	ErrNotFound = driver.ErrNotFound

	// ErrNoWorkers is returned by Start when the client has no workers: an
	// insert-only client enqueues but is never started.
	ErrNoWorkers = errors.New("sluice: no workers registered")

	// ErrAlreadyStarted is returned by Start on a running client.
	ErrAlreadyStarted = errors.New("sluice: client already started")

	// ErrDuplicateWorker is returned by AddWorkerSafely when a worker for
	// the same topic is already registered.
	ErrDuplicateWorker = errors.New("sluice: duplicate worker")

	// ErrInvalidProgress is returned by ReportProgress for a percent or message
	// it does not accept. The error is a *ProgressError. Nothing is recorded.
	ErrInvalidProgress = errors.New("sluice: invalid progress")

	// ErrNotJobContext is returned by SetResult and ReportProgress when given a
	// context that no client handed to a worker.
	ErrNotJobContext = errors.New("sluice: not a job's context")
)

// ConfigError names the Config field NewClient rejected and why.
type ConfigError struct {
	// Field is the name of the rejected field, e.g. "Queues[mail].MaxWorkers".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("sluice: invalid config: %s: %s", e.Field, e.Reason)
}

// Is makes a ConfigError match ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// OptionsError names the EnqueueOptions field that was rejected and why.
type OptionsError struct {
	// Field is the name of the rejected field, e.g. "MaxRetries".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *OptionsError) Error() string {
	return fmt.Sprintf("sluice: invalid enqueue options: %s: %s", e.Field, e.Reason)
}

// Is makes an OptionsError match ErrInvalidOptions.
func (e *OptionsError) Is(target error) bool { return target == ErrInvalidOptions }

// ArgsError is returned when a job's arguments cannot be encoded as JSON.
type ArgsError struct {
	// Topic is the topic of the job whose arguments failed.
	Topic string
	// Err is the encoder's error.
	Err error
}

// Error implements error.
func (e *ArgsError) Error() string {
	return fmt.Sprintf("sluice: invalid job args for %q: %v", e.Topic, e.Err)
}

// Unwrap returns the encoder's error.
func (e *ArgsError) Unwrap() error { return e.Err }

// Is makes an ArgsError match ErrInvalidArgs.
func (e *ArgsError) Is(target error) bool { return target == ErrInvalidArgs }

// SnoozeError is returned by Snooze. A worker returns it to run its job
// again after Delay without spending a retry.
type SnoozeError struct {
	// Delay is how long to wait before the job runs again.
	Delay time.Duration
}

// Error implements error.
func (e *SnoozeError) Error() string { return fmt.Sprintf("sluice: job snoozed for %s", e.Delay) }

// Snooze tells the client to run the job again after d, without counting
// the attempt against its retries. A worker returns it from Work, or passes
// it to Nack. A negative d is treated as zero.
func Snooze(d time.Duration) error {
	return &SnoozeError{Delay: max(d, 0)}
}

// CancelError is returned by Cancel. A worker returns it to end its job as
// cancelled, without retries.
type CancelError struct {
	// Err is the reason, recorded as the attempt's error; it may be nil.
	Err error
}

// Error implements error.
func (e *CancelError) Error() string {
	if e.Err == nil {
		return "sluice: job cancelled"
	}
	return "sluice: job cancelled: " + e.Err.Error()
}

// Unwrap returns the reason.
func (e *CancelError) Unwrap() error { return e.Err }

// Cancel tells the client to end the job as cancelled and never retry it.
// err, which may be nil, is recorded as the attempt's error. A worker returns
// it from Work, or passes it to Nack.
func Cancel(err error) error { return &CancelError{Err: err} }

// PanicError is the error recorded for a worker that panicked.
type PanicError struct {
	// Value is what the worker panicked with.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack string
}

// Error implements error.
func (e *PanicError) Error() string { return fmt.Sprintf("sluice: worker panicked: %v", e.Value) }

// StatusConflictError is returned when a job's status does not allow the
// action asked for: cancelling a finished job, requeueing one that has not
// failed or been cancelled, deleting a processing job, retrying one that is
// not pending. Nothing was changed. It matches ErrStatusConflict.
type StatusConflictError struct {
	// ID is the job's ID.
	ID string
	// Action is what was asked: "cancel", "requeue", "delete" or "retry now".
	Action string
	// Status is the job's status, which does not allow it.
	Status JobStatus
}

// Error implements error.
func (e *StatusConflictError) Error() string {
	return fmt.Sprintf("sluice: cannot %s job %s: it is %s", e.Action, e.ID, e.Status)
}

// Is makes a StatusConflictError match ErrStatusConflict.
func (e *StatusConflictError) Is(target error) bool { return target == ErrStatusConflict }

// FilterError names the JobFilter, ListFilter or StatsFilter field that was rejected
// and why. It matches ErrInvalidFilter.
type FilterError struct {
	// Field is the rejected field, e.g. "Limit" or "Statuses[1]".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *FilterError) Error() string {
	return fmt.Sprintf("sluice: invalid filter: %s: %s", e.Field, e.Reason)
}

// Is makes a FilterError match ErrInvalidFilter.
func (e *FilterError) Is(target error) bool { return target == ErrInvalidFilter }

// ProgressError names the argument of ReportProgress that was rejected and
// why.
type ProgressError struct {
	// Field is "percent" or "message".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *ProgressError) Error() string {
	return fmt.Sprintf("sluice: invalid progress: %s: %s", e.Field, e.Reason)
}

// Is makes a ProgressError match ErrInvalidProgress.
func (e *ProgressError) Is(target error) bool { return target == ErrInvalidProgress }

// ErrUnknownTopic is returned when RawArgs name a topic that the enqueuing
// client, which has workers, has no worker for. The error is an
// *UnknownTopicError. Nothing is written.
var ErrUnknownTopic = errors.New("sluice: unknown topic")

// UnknownTopicError names the topic of RawArgs that the enqueuing client
// has no worker for, and those it has. It matches ErrUnknownTopic.
type UnknownTopicError struct {
	// Topic is the topic refused.
	Topic string
	// Topics are the topics the client has workers for, sorted.
	Topics []string
}

// Error implements error.
func (e *UnknownTopicError) Error() string {
	return fmt.Sprintf("sluice: unknown topic %q: this client has workers for %q only", e.Topic, e.Topics)
}

// Is makes an UnknownTopicError match ErrUnknownTopic.
func (e *UnknownTopicError) Is(target error) bool { return target == ErrUnknownTopic }

// Errors of schedules, besides those of enqueueing that a schedule's
// fields can cause. Each is returned wrapped; test with errors.Is.
var (
	// ErrInvalidSchedule is returned for a schedule or periodic job that
	// cannot be stored. The error is a *ScheduleError naming the field.
	ErrInvalidSchedule = errors.New("sluice: invalid schedule")

	// ErrDuplicateSchedule is returned by CreateSchedule when a stored
	// schedule has the name already. Nothing was written.
	ErrDuplicateSchedule = driver.ErrDuplicateSchedule

	// ErrScheduleNotFound is returned when no stored schedule has the
	// given name.
	ErrScheduleNotFound = driver.ErrScheduleNotFound
)

// ScheduleError names the field of a schedule, or of a periodic job, that
// was rejected and why. It matches ErrInvalidSchedule, and also the error
// behind it when an enqueue would have refused the field (ErrUnknownQueue,
// ErrPayloadTooLarge, ErrInvalidArgs, ErrInvalidOptions, ErrEmptyTopic).
type ScheduleError struct {
	// Name is the schedule's name.
	Name string
	// Field is the rejected field, e.g. "Cron" or "TimeZone".
	Field string
	// Reason says what is wrong with it.
	Reason string
	// Err is the enqueue error behind the rejection, if any.
	Err error
}

// Error implements error.
func (e *ScheduleError) Error() string {
	return fmt.Sprintf("sluice: invalid schedule %q: %s: %s", e.Name, e.Field, e.Reason)
}

// Unwrap returns the enqueue error behind the rejection, if any.
func (e *ScheduleError) Unwrap() error { return e.Err }

// Is makes a ScheduleError match ErrInvalidSchedule.
func (e *ScheduleError) Is(target error) bool { return target == ErrInvalidSchedule }

// ErrWebhookSignature is returned by VerifyWebhook for a delivery whose
// signature is missing, malformed, wrong, or too old.
var ErrWebhookSignature = errors.New("sluice: invalid webhook signature")

// Errors of encrypted payloads (see Encryption). Each is returned
// wrapped; test with errors.Is.
var (
	// ErrUnknownKey is returned for a payload encrypted with a key the
	// caller does not hold: by GetDecrypted, and as the error of an
	// attempt whose client lacks the key (the job fails for good, its
	// payload kept). The error is an *UnknownKeyError.
	ErrUnknownKey = errors.New("sluice: payload encrypted with a key not held")

	// ErrDecrypt is returned for an encrypted payload that does not
	// decrypt with the key its ID names: the key given under that ID is
	// another, or the stored payload was changed or copied from another
	// job.
	ErrDecrypt = errors.New("sluice: encrypted payload does not decrypt")

	// ErrInvalidKey is returned for an EncryptionKey that cannot be used.
	// The error is a *KeyError.
	ErrInvalidKey = errors.New("sluice: invalid encryption key")
)

// UnknownKeyError names the job whose payload is encrypted with a key the
// caller does not hold, and that key's ID. It matches ErrUnknownKey.
type UnknownKeyError struct {
	// JobID is the job's ID, KeyID the ID of the key of its payload.
	JobID, KeyID string
}

// Error implements error.
func (e *UnknownKeyError) Error() string {
	return fmt.Sprintf("sluice: job %s: payload encrypted with key %q, which is not held", e.JobID, e.KeyID)
}

// Is makes an UnknownKeyError match ErrUnknownKey.
func (e *UnknownKeyError) Is(target error) bool { return target == ErrUnknownKey }

// KeyError names an EncryptionKey that cannot be used, by its index
// among those given and its ID, and says why: an ID that is not 1 to 64
// letters, digits or _ . : -, a key that is not 16, 24 or 32 bytes, or
// an ID given twice. It matches ErrInvalidKey.
type KeyError struct {
	Index  int
	ID     string
	Reason string
}

// Error implements error.
func (e *KeyError) Error() string {
	return fmt.Sprintf("sluice: invalid encryption key %d (%q): %s", e.Index, e.ID, e.Reason)
}

// Is makes a KeyError match ErrInvalidKey.
func (e *KeyError) Is(target error) bool { return target == ErrInvalidKey }
