package driver_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// FuzzAppendJSONString checks that AppendJSONString writes what
// encoding/json writes, for any string.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", `"quoted" \ back`, "<a href='x'>&</a>", "\x00\x01\b\f\n\r\t\x1f\x7f",
		"caf\u00e9 \u2713 \U0001F600", "bad \xff\xfe utf8", "line\u2028para\u2029", "\xe2\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		got := driver.AppendJSONString([]byte("x"), s)
		require.Equal(t, "x"+string(want), string(got))
	})
}
