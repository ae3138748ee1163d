package sealed_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/sealed"
)

func key(id string, n int) sealed.Key {
	return sealed.Key{ID: id, Key: bytes.Repeat([]byte{byte(len(id))}, n)}
}

func TestNewKeyringRefusesBadKeys(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		keys  []sealed.Key
		index int
	}{
		"short key":     {[]sealed.Key{key("k1", 32), key("k2", 15)}, 1},
		"long key":      {[]sealed.Key{key("k1", 33)}, 0},
		"empty ID":      {[]sealed.Key{key("", 32)}, 0},
		"ID with space": {[]sealed.Key{key("k 1", 32)}, 0},
		"ID too long":   {[]sealed.Key{key(string(bytes.Repeat([]byte("k"), 65)), 32)}, 0},
		"ID twice":      {[]sealed.Key{key("k1", 16), key("k1", 32)}, 1},
	} {
		_, err := sealed.NewKeyring(tc.keys)
		var ke *sealed.KeyError
		require.ErrorAs(t, err, &ke, name)
		require.Equal(t, tc.index, ke.Index, name)
	}
	for _, n := range []int{16, 24, 32} {
		_, err := sealed.NewKeyring([]sealed.Key{key("k", n)})
		require.NoError(t, err, "%d bytes", n)
	}
}

func TestSealOpensWithAnyKeyOfTheRing(t *testing.T) {
	t.Parallel()
	old, err := sealed.NewKeyring([]sealed.Key{key("k1", 32)})
	require.NoError(t, err)
	rotated, err := sealed.NewKeyring([]sealed.Key{key("k1", 32), key("k22", 16)})
	require.NoError(t, err)
	require.Equal(t, "k22", rotated.Newest())
	plain := []byte(`{"customer_id":42}`)
	ad := sealed.AdditionalData("report", "0193")
	byOld, byNew := old.Seal(plain, ad), rotated.Seal(plain, ad)
	require.NotContains(t, string(byOld), "customer_id")
	require.False(t, bytes.Equal(old.Seal(plain, ad), byOld), "a fresh nonce each time")

	for _, tc := range []struct {
		ring *sealed.Keyring
		env  []byte
		key  string
		err  error
	}{
		{rotated, byOld, "k1", nil},  // old keys still open
		{rotated, byNew, "k22", nil}, // new enqueues use the newest
		{old, byNew, "k22", sealed.ErrUnknownKey},
	} {
		env, ok := sealed.Parse(tc.env)
		require.True(t, ok)
		require.Equal(t, tc.key, env.Key)
		got, err := tc.ring.Open(env, ad)
		if tc.err != nil {
			require.ErrorIs(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, plain, got)
	}
	env, _ := sealed.Parse(byNew)
	_, err = rotated.Open(env, sealed.AdditionalData("report", "0194"))
	require.ErrorIs(t, err, sealed.ErrOpen, "bound to its job")
	env.Data[len(env.Data)-1] ^= 1
	_, err = rotated.Open(env, ad)
	require.ErrorIs(t, err, sealed.ErrOpen, "changed")
	other, _ := sealed.NewKeyring([]sealed.Key{key("k22", 32)})
	env, _ = sealed.Parse(byNew)
	_, err = other.Open(env, ad)
	require.ErrorIs(t, err, sealed.ErrOpen, "another key of the same ID")
	_, err = rotated.Open(&sealed.Envelope{Key: "k1", Data: []byte("short")}, ad)
	require.ErrorIs(t, err, sealed.ErrOpen)
}

func TestParseReadsWhatDatabasesStore(t *testing.T) {
	t.Parallel()
	ring, err := sealed.NewKeyring([]sealed.Key{key("k1", 32)})
	require.NoError(t, err)
	s := ring.Seal([]byte(`{}`), nil)
	var m map[string]string
	require.NoError(t, json.Unmarshal(s, &m))
	// As Postgres's jsonb gives it back: members reordered and spaced.
	jsonb := `{"key": "k1", "data": "` + m["data"] + `", "sluice_sealed": "v1"}`
	for _, p := range []string{string(s), jsonb} {
		env, ok := sealed.Parse([]byte(p))
		require.True(t, ok, p)
		_, err := ring.Open(env, nil)
		require.NoError(t, err)
	}
	for _, p := range []string{
		`{"customer":"sluice_sealed"}`,
		`{"sluice_sealed":"v1","key":"k1","data":"AAAA","more":1}`,
		`{"sluice_sealed":"v2","key":"k1","data":"AAAA"}`,
		`{"sluice_sealed":"v1","key":"k 1","data":"AAAA"}`,
		`{"sluice_sealed":"v1","key":"k1","data":"%%%"}`,
		`{"sluice_sealed":"v1","key":"k1"}`,
		`{"sluice_sealed":"v1","key":"k1","data":"AAAA"} {}`,
		`["sluice_sealed"]`,
	} {
		_, ok := sealed.Parse([]byte(p))
		require.False(t, ok, p)
	}
}

// FuzzParse checks that Parse never panics, and that what it accepts
// names a key an ID may be.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"sluice_sealed":"v1","key":"k1","data":"AAAA"}`))
	f.Add([]byte(`{"key": "k1", "data": "", "sluice_sealed": "v1"}`))
	f.Add([]byte(`{"a":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		env, ok := sealed.Parse(b)
		if ok {
			// What Parse accepts is a JSON object of the three members.
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil || len(m) != 3 || m[sealed.Mark] != sealed.Version || m["key"] != env.Key {
				t.Fatalf("Parse accepted %q, which decodes as %v (%v)", b, m, err)
			}
			_, err := sealed.NewKeyring([]sealed.Key{{ID: env.Key, Key: make([]byte, 16)}})
			if err != nil {
				t.Fatalf("parsed key ID %q is not one a key may have: %v", env.Key, err)
			}
		}
	})
}

func TestKeyErrorSaysWhich(t *testing.T) {
	t.Parallel()
	_, err := sealed.NewKeyring([]sealed.Key{key("k1", 7)})
	require.EqualError(t, err, `key 0 ("k1"): is 7 bytes; AES takes 16, 24 or 32`)
	require.False(t, errors.Is(err, sealed.ErrOpen))
}

// BenchmarkOpen parses and opens a sealed payload of 200 bytes, as a
// worker's client does once per job; BenchmarkSeal seals one, as an
// enqueue does.
func BenchmarkOpen(b *testing.B) {
	ring, _ := sealed.NewKeyring([]sealed.Key{key("k1", 32)})
	ad := sealed.AdditionalData("bench", "01937c2e-0000-7000-8000-000000000000")
	s := ring.Seal(bytes.Repeat([]byte("x"), 200), ad)
	b.ReportAllocs()
	for b.Loop() {
		env, ok := sealed.Parse(s)
		if !ok {
			b.Fatal("not sealed")
		}
		if _, err := ring.Open(env, ad); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSeal(b *testing.B) {
	ring, _ := sealed.NewKeyring([]sealed.Key{key("k1", 32)})
	ad := sealed.AdditionalData("bench", "01937c2e-0000-7000-8000-000000000000")
	p := bytes.Repeat([]byte("x"), 200)
	b.ReportAllocs()
	for b.Loop() {
		ring.Seal(p, ad)
	}
}
