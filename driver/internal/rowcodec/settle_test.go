package rowcodec_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

func TestSettle(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                    string
		policy                  driver.DependencyPolicy
		n, done, failed         int
		wantRelease, wantCancel bool
	}{
		{"all completed", driver.DependencyCancel, 2, 2, 0, true, false},
		{"all completed, run", driver.DependencyRun, 2, 2, 0, true, false},
		{"one pending", driver.DependencyCancel, 2, 1, 0, false, false},
		{"one failed, one pending: cancel", driver.DependencyCancel, 2, 0, 1, false, true},
		{"one failed, one pending: run waits", driver.DependencyRun, 2, 0, 1, false, false},
		{"one failed, one completed: run", driver.DependencyRun, 2, 1, 1, true, false},
		{"one failed, one completed: cancel", driver.DependencyCancel, 2, 1, 1, false, true},
		{"all failed: run", driver.DependencyRun, 1, 0, 1, true, false},
	} {
		release, cancel := rowcodec.Settle(c.policy, c.n, c.done, c.failed)
		require.Equal(t, c.wantRelease, release, c.name)
		require.Equal(t, c.wantCancel, cancel, c.name)
	}
}
