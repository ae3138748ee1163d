// Package sealed encrypts job payloads at rest with AES-GCM, under keys
// named by ID so that they can be rotated: a keyring seals with its
// newest key and opens with any of its keys.
//
// A sealed payload is itself a JSON object, so that it is stored where a
// payload is (a jsonb column on Postgres), whose members are the format's
// mark, the key's ID and the sealed data:
//
//	{"sluice_sealed":"v1","key":"k2","data":"<base64 of nonce, ciphertext and tag>"}
//
// Databases may reorder the members and space them (Postgres's jsonb
// does); Parse reads them in any order. The additional data bound to
// the ciphertext names the job (its topic and ID), so that a sealed
// payload copied onto another job does not open.
package sealed

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
)

// Mark is the name of the member that marks a sealed payload, and Version
// its value.
const (
	Mark    = "sluice_sealed"
	Version = "v1"
)

// markBytes is what a sealed payload holds, however it is spaced: the
// quoted mark, which Parse looks for before it decodes anything.
var markBytes = []byte(`"` + Mark + `"`)

// ErrUnknownKey is returned by Open for a payload sealed with a key the
// keyring does not hold.
var ErrUnknownKey = errors.New("sealed with a key that is not held")

// ErrOpen is returned by Open when a payload does not open: its data was
// changed, belongs to another job, or was sealed by another key of the
// same ID.
var ErrOpen = errors.New("sealed payload does not open")

// KeyError is a key that cannot be used: an ID that is not 1 to 64
// letters, digits or _ . : -, a key that is not 16, 24 or 32 bytes long
// (AES-128, AES-192 or AES-256), or an ID given twice.
type KeyError struct {
	// Index is the key's index in the list given, ID its ID.
	Index int
	ID    string
	// Reason says what is wrong with it.
	Reason string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("key %d (%q): %s", e.Index, e.ID, e.Reason)
}

// Key is an AES key and its ID.
type Key struct {
	ID  string
	Key []byte
}

var idRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// Keyring seals with its newest key and opens with any of its keys.
type Keyring struct {
	aeads  map[string]cipher.AEAD
	newest string
}

// NewKeyring returns a keyring of keys, oldest first: the last one seals.
// It returns a *KeyError for the first key that cannot be used.
func NewKeyring(keys []Key) (*Keyring, error) {
	k := &Keyring{aeads: make(map[string]cipher.AEAD, len(keys))}
	for i, key := range keys {
		switch {
		case !idRE.MatchString(key.ID):
			return nil, &KeyError{Index: i, ID: key.ID, Reason: "an ID is 1 to 64 letters, digits, or _ . : -"}
		case len(key.Key) != 16 && len(key.Key) != 24 && len(key.Key) != 32:
			return nil, &KeyError{Index: i, ID: key.ID,
				Reason: fmt.Sprintf("is %d bytes; AES takes 16, 24 or 32", len(key.Key))}
		case k.aeads[key.ID] != nil:
			return nil, &KeyError{Index: i, ID: key.ID, Reason: "the ID is given twice"}
		}
		block, err := aes.NewCipher(key.Key)
		if err != nil {
			return nil, &KeyError{Index: i, ID: key.ID, Reason: err.Error()}
		}
		if k.aeads[key.ID], err = cipher.NewGCM(block); err != nil {
			return nil, &KeyError{Index: i, ID: key.ID, Reason: err.Error()}
		}
		k.newest = key.ID
	}
	return k, nil
}

// Newest returns the ID of the key that seals; empty for a keyring
// without keys.
func (k *Keyring) Newest() string { return k.newest }

// Has reports whether the keyring holds a key of this ID.
func (k *Keyring) Has(id string) bool { return k.aeads[id] != nil }

// AdditionalData returns the data bound to the payload of the job of
// topic and ID.
func AdditionalData(topic, id string) []byte {
	return []byte(Version + "\x00" + topic + "\x00" + id)
}

// Seal returns payload sealed with the newest key, bound to ad. It panics
// on a keyring without keys.
func (k *Keyring) Seal(payload, ad []byte) []byte {
	aead := k.aeads[k.newest]
	ns := aead.NonceSize()
	buf := make([]byte, ns, ns+len(payload)+aead.Overhead())
	_, _ = rand.Read(buf) // never fails (crypto/rand)
	sealed := aead.Seal(buf, buf, payload, ad)
	out := make([]byte, 0, len(`{"":"","key":"","data":""}`)+len(Mark)+len(Version)+len(k.newest)+
		base64.StdEncoding.EncodedLen(len(sealed)))
	out = append(out, `{"`+Mark+`":"`+Version+`","key":"`...)
	out = append(out, k.newest...) // an ID needs no escaping
	out = append(out, `","data":"`...)
	out = base64.StdEncoding.AppendEncode(out, sealed)
	return append(out, `"}`...)
}

// Envelope is a sealed payload's members.
type Envelope struct {
	// Key is the ID of the key that sealed it.
	Key string
	// Data is the nonce, ciphertext and tag.
	Data []byte
}

// Parse reports whether payload is sealed, and returns its envelope if
// so. A payload is sealed when it is a JSON object of exactly the three
// members of the format, with the mark's value Version, an ID that a key
// may have, and data in base64.
func Parse(payload []byte) (*Envelope, bool) {
	if !bytes.Contains(payload, markBytes) {
		return nil, false // the common case: no decoding at all
	}
	if mark, key, data, ok := flat(payload); ok {
		// The forms Seal writes and databases give back, read without
		// reflection: a worker reads one per job.
		return envelope(string(mark) == Version, string(key), data)
	}
	var v struct {
		Mark *string `json:"sluice_sealed"`
		Key  *string `json:"key"`
		Data *string `json:"data"`
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if dec.Decode(&v) != nil || dec.More() || v.Mark == nil || v.Key == nil || v.Data == nil {
		return nil, false
	}
	return envelope(*v.Mark == Version, *v.Key, []byte(*v.Data))
}

// envelope returns the envelope of a sealed payload's members (whether
// its mark is Version, its key, its data in base64), and false when they
// are not those of one.
func envelope(version bool, key string, data []byte) (*Envelope, bool) {
	if !version || !idRE.MatchString(key) {
		return nil, false
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(data)))
	n, err := base64.StdEncoding.Decode(b, data)
	if err != nil {
		return nil, false
	}
	return &Envelope{Key: key, Data: b[:n]}, true
}

// flat reads b as a JSON object of exactly the three members of a sealed
// payload, each a string without escapes, in any order and spacing, and
// returns them. ok is false for anything else, which Parse then decodes
// in full.
func flat(b []byte) (mark, key, data []byte, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, nil, nil, false
	}
	var seen [3]bool
	for i++; ; i++ {
		var name, value []byte
		if name, i, ok = plainString(b, skipSpace(b, i)); !ok {
			return nil, nil, nil, false
		}
		if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
			return nil, nil, nil, false
		}
		if value, i, ok = plainString(b, skipSpace(b, i+1)); !ok {
			return nil, nil, nil, false
		}
		var k int
		switch string(name) {
		case Mark:
			k, mark = 0, value
		case "key":
			k, key = 1, value
		case "data":
			k, data = 2, value
		default:
			return nil, nil, nil, false
		}
		if seen[k] {
			return nil, nil, nil, false
		}
		seen[k] = true
		if i = skipSpace(b, i); i < len(b) && b[i] == ',' {
			continue
		}
		if i >= len(b) || b[i] != '}' || skipSpace(b, i+1) != len(b) || seen != [3]bool{true, true, true} {
			return nil, nil, nil, false
		}
		return mark, key, data, true
	}
}

// plainString returns the JSON string at b[i], which must hold no escape,
// and the index after it.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	end := bytes.IndexByte(b[i+1:], '"')
	if end < 0 || bytes.IndexByte(b[i+1:i+1+end], '\\') >= 0 {
		return nil, i, false
	}
	return b[i+1 : i+1+end], i + end + 2, true
}

// skipSpace returns the index of the first byte of b from i on that is
// not JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// Open returns the payload env seals, opened with the key it names and
// checked against ad: an error matching ErrUnknownKey when the keyring
// does not hold that key, ErrOpen when it does not open. It opens in
// place: env's Data is spent once it has opened.
func (k *Keyring) Open(env *Envelope, ad []byte) ([]byte, error) {
	aead := k.aeads[env.Key]
	if aead == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKey, env.Key)
	}
	ns := aead.NonceSize()
	if len(env.Data) < ns+aead.Overhead() {
		return nil, fmt.Errorf("%w: key %q: too short", ErrOpen, env.Key)
	}
	plain, err := aead.Open(env.Data[ns:ns], env.Data[:ns], env.Data[ns:], ad)
	if err != nil {
		return nil, fmt.Errorf("%w: key %q", ErrOpen, env.Key)
	}
	return plain, nil
}
