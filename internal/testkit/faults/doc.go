// Package faults is the fault-injection suite: its tests start real worker
// processes (cmd/faultworker) against Postgres and SQLite, inject faults
// (kill -9, terminated backends, exhausted connections, a held transaction
// horizon, overload, a stop under load) and check from the database
// afterwards that no job was lost, none took effect twice and none was left
// stuck. Each scenario prints one line:
//
//	FAULT scenario=<name> driver=<pg|sqlite> jobs=<n> lost=<n> duplicate_effects=<n> stuck=<n> recovery_s=<x>
//
// The tests run in a short form with go test; -faults.long (or
// SLUICE_FAULTS_LONG=1) runs each scenario for minutes instead of seconds.
// See docs/guarantees.md for what the scenarios prove.
package faults
