package sluice

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// FuzzFlatAttrs checks that the encoding of flat attributes without
// encoding/json writes the bytes the general one writes, and that it
// leaves to the general one what it cannot write the same.
func FuzzFlatAttrs(f *testing.F) {
	f.Add("n", "s", "worked <&>", int64(-3), uint64(7), true, int64(1500), int64(1_700_000_000_123_456_789), 0)
	f.Add("k", "k", "dup", int64(0), uint64(0), false, int64(0), int64(0), 1)
	f.Add("", "x\x00y", "bad \xff", int64(1)<<62, ^uint64(0), false, int64(-1), int64(-1), 2)
	f.Add("\u2028", "é", "line\nbreak", int64(9), uint64(1), true, int64(time.Hour), int64(0), 3)
	f.Fuzz(func(t *testing.T, k1, k2, s string, i int64, u uint64, bl bool, d, ns int64, extra int) {
		r := slog.NewRecord(time.Now(), slog.LevelInfo, "m", 0)
		r.AddAttrs(slog.String(k1, s), slog.Int64(k2, i), slog.Uint64("u", u), slog.Bool("b", bl),
			slog.Duration("d", time.Duration(d)), slog.Time("t", time.Unix(0, ns).In(time.FixedZone("X", 7200))))
		extra = (extra%4 + 4) % 4
		switch extra {
		case 1:
			r.AddAttrs(slog.Float64("f", float64(i)/3)) // not flat
		case 2:
			r.AddAttrs(slog.Group("g", slog.String("k", s))) // not flat
		case 3:
			r.AddAttrs(slog.Any("e", errors.New(s))) // not flat
		}
		h := &jobHandler{}
		want := h.nestedAttrs(r)
		got, ok := flatAttrs(r)
		if ok {
			require.Equal(t, string(want), string(got))
		}
		k1, k2 = driver.CleanText(k1, 0), driver.CleanText(k2, 0) // as keys are kept
		flat := k1 != "" && k2 != "" && k1 != k2 && extra == 0
		for _, k := range []string{"u", "b", "d", "t"} {
			flat = flat && k1 != k && k2 != k
		}
		require.Equal(t, flat, ok || r.NumAttrs() > maxFlatAttrs, "flat attributes are encoded without encoding/json")
	})
}
