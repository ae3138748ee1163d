package main

import (
	"errors"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice"
)

// checkIDs refuses, as bad usage, any of ids that is not a job ID: a UUID
// in its canonical form, as the web API takes them. A mistyped ID is thus
// told apart from a job that does not exist, and nothing is read or
// written.
func checkIDs(ids []string) error {
	for _, id := range ids {
		if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
			return usageErrorf("%q is not a job ID (a UUID such as 01937c2e-5f0a-7d3b-9c1e-2a4b6c8d0e1f)", id)
		}
	}
	return nil
}

// noJobError reports that no job has the ID asked for. It matches
// sluice.ErrNotFound, so the exit code is 3.
type noJobError struct{ id string }

func (e *noJobError) Error() string { return "no job " + e.id }

func (e *noJobError) Is(target error) bool { return target == sluice.ErrNotFound }

// jobErr returns err, an error of a call on the job id, as the command
// reports it: a job not found is "no job <id>", without the layers (client,
// driver) the error passed through.
func jobErr(id string, err error) error {
	if errors.Is(err, sluice.ErrNotFound) {
		return &noJobError{id: id}
	}
	return err
}
