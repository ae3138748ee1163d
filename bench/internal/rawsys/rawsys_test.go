package rawsys

import "testing"

func TestFromEnv(t *testing.T) {
	def := Settings{Batch: 1000, Conns: 4}
	for _, c := range []struct {
		batch, conns string
		want         Settings
		bad          bool
	}{
		{"", "", def, false},
		{"250", "", Settings{Batch: 250, Conns: 4}, false},
		{"100", "8", Settings{Batch: 100, Conns: 8}, false},
		{"0", "", def, true},
		{"", "two", def, true},
	} {
		t.Setenv(BatchEnv, c.batch)
		t.Setenv(ConnsEnv, c.conns)
		got, err := FromEnv(def)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("FromEnv with %q, %q = %+v, %v", c.batch, c.conns, got, err)
		}
	}
}
