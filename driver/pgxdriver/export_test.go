package pgxdriver

// Queries returns the driver's claim, heartbeat and rescue SQL, for tests
// that check their plans.
func (d *Driver) Queries() (claim, heartbeat, rescue string) {
	return d.q.claim, d.q.heartbeat, d.q.rescue
}
