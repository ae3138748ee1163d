package sluice

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func TestRetentionCleanFor(t *testing.T) {
	t.Parallel()
	r := Retention{
		Completed: time.Hour, Failed: KeepForever,
		Topics: map[string]Keep{"a": {Completed: KeepNone}, "b": {Completed: KeepNone, Failed: time.Minute},
			"c": {Completed: KeepForever}},
		Queues: map[string]Keep{"bulk": {Completed: time.Minute, Failed: time.Minute}, "slow": {Cancelled: KeepForever}},
	}
	require.NoError(t, r.fill())
	for _, tc := range []struct {
		status JobStatus
		want   []retentionClean
	}{
		{StatusCompleted, []retentionClean{
			{0, driver.JobCleanParams{Topics: []string{"a", "b"}}},
			{time.Minute, driver.JobCleanParams{Queues: []string{"bulk"}, NotTopics: []string{"a", "b", "c"}}},
			{time.Hour, driver.JobCleanParams{NotTopics: []string{"a", "b", "c"}, NotQueues: []string{"bulk"}}},
		}},
		{StatusFailed, []retentionClean{ // the Retention's own keeps failed jobs for good
			{time.Minute, driver.JobCleanParams{Topics: []string{"b"}}},
			{time.Minute, driver.JobCleanParams{Queues: []string{"bulk"}, NotTopics: []string{"b"}}},
		}},
		{StatusCancelled, []retentionClean{
			{DefaultKeepFailed, driver.JobCleanParams{NotQueues: []string{"slow"}}},
		}},
	} {
		require.Equal(t, tc.want, r.cleanFor(tc.status), tc.status)
	}
	for _, tc := range []struct {
		topic, queue string
		status       JobStatus
		want         time.Duration
	}{
		{"a", "bulk", StatusCompleted, KeepNone},          // the topic's rule wins
		{"a", "bulk", StatusFailed, time.Minute},          // a leaves failed jobs to its queue
		{"x", "bulk", StatusCancelled, DefaultKeepFailed}, // bulk leaves cancelled jobs to the default
		{"x", "slow", StatusCancelled, KeepForever},
		{"x", "default", StatusCompleted, time.Hour},
	} {
		require.Equal(t, tc.want, r.keep(tc.topic, tc.queue, tc.status), "%+v", tc)
	}
}
