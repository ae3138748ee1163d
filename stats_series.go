package sluice

import (
	"fmt"
	"time"
)

// checkBucket validates StatsFilter.Bucket for a window.
func checkBucket(bucket, window time.Duration) error {
	switch {
	case bucket == 0:
		return nil
	case bucket < time.Second:
		return &FilterError{Field: "Bucket", Reason: fmt.Sprintf("%s is less than a second", bucket)}
	case window/bucket >= MaxStatsBuckets:
		return &FilterError{Field: "Bucket", Reason: fmt.Sprintf("%s makes more than %d buckets of the %s window", bucket, MaxStatsBuckets, window)}
	}
	return nil
}

// fillSeries returns the buckets of sparse, the driver's counts, with the
// buckets from the one holding from to the one holding to that have no
// counts filled in with zeros.
func fillSeries(sparse []StatsBucket, from, to time.Time, bucket time.Duration) []StatsBucket {
	start, end := bucketStart(from, bucket), bucketStart(to, bucket)
	out := make([]StatsBucket, 0, int(end.Sub(start)/bucket)+1)
	i := 0
	for at := start; !at.After(end); at = at.Add(bucket) {
		for i < len(sparse) && sparse[i].Start.Before(at) {
			i++ // before the window's first bucket: not expected, skipped
		}
		if i < len(sparse) && sparse[i].Start.Equal(at) {
			out = append(out, sparse[i])
			i++
			continue
		}
		out = append(out, StatsBucket{Start: at})
	}
	return out
}

// bucketStart returns t rounded down to a multiple of d since the Unix epoch,
// in UTC, as drivers align buckets.
func bucketStart(t time.Time, d time.Duration) time.Time {
	us, width := t.UnixMicro(), d.Microseconds()
	return time.UnixMicro(us - us%width).UTC()
}
