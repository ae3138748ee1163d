package operr_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/internal/operr"
)

func TestWrap(t *testing.T) {
	t.Parallel()
	failed := errors.New("statement failed")
	live := context.Background()
	cancelled, cancel := context.WithCancel(live)
	cancel()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		err     error
		want    string
		matches []error
	}{
		{"nil", cancelled, nil, "", nil},
		{"live", live, failed, "pgxdriver: claim: statement failed", []error{failed}},
		{"ended", cancelled, failed, "pgxdriver: claim: context canceled: statement failed",
			[]error{failed, context.Canceled}},
		{"ended and said so", cancelled, fmt.Errorf("query: %w", context.Canceled),
			"pgxdriver: claim: query: context canceled", []error{context.Canceled}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := operr.Wrap(tc.ctx, "pgxdriver", "claim", tc.err)
			if tc.err == nil {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
			for _, target := range tc.matches {
				require.ErrorIs(t, err, target)
			}
		})
	}
}
