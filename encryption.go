package sluice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/sealed"
)

// EncryptionKey is an AES key and the ID that names it in the payloads
// it encrypts (see Encryption).
type EncryptionKey struct {
	// ID names the key: 1 to 64 letters, digits, or _ . : -. It is stored
	// in clear with each payload the key encrypts, so that a client knows
	// which of its keys decrypts it.
	ID string
	// Key is 16, 24 or 32 random bytes: AES-128, AES-192 or AES-256.
	Key []byte
}

// Encryption makes a client encrypt the payloads of some topics at rest,
// with AES-GCM, and decrypt them for their workers. What stays clear
// text: the topic, queue, priority, unique key, tags, metadata, result,
// errors and logs of a job; only its payload is encrypted.
type Encryption struct {
	// Keys are the keys, oldest first: the last encrypts new jobs, and
	// every one decrypts the jobs it encrypted. To rotate, append a new
	// key to every client's Keys; drop an old one once no job it
	// encrypted is left. Default none.
	Keys []EncryptionKey
	// Topics are the topics whose payloads this client encrypts when it
	// enqueues them, beside the topics of its workers whose EncryptArgs
	// returns true. Every client that enqueues a topic must name it (or
	// have its worker), or its jobs are stored in clear. Default none.
	Topics []string
}

// encryptArgs is implemented by workers that have their jobs' payloads
// encrypted (see WorkerDefaults.EncryptArgs).
type encryptArgs interface{ EncryptArgs() bool }

// EncryptArgs returns false: the worker's jobs are encrypted only if
// Config.Encryption.Topics names their topic. A worker that returns true
// has the payloads of its topic encrypted by any client it is registered
// with, as if its topic were in Config.Encryption.Topics.
func (WorkerDefaults[T]) EncryptArgs() bool { return false }

// crypt is what a client knows of encryption: its keys, and the topics
// it encrypts.
type crypt struct {
	keys   *sealed.Keyring
	topics map[string]bool
}

// newCrypt returns cfg's encryption, or a *ConfigError.
func newCrypt(cfg *Config) (*crypt, error) {
	keys, err := keyring(cfg.Encryption.Keys)
	if err != nil {
		var ke *KeyError
		errors.As(err, &ke)
		return nil, &ConfigError{Field: fmt.Sprintf("Encryption.Keys[%d]", ke.Index), Reason: ke.Reason}
	}
	c := &crypt{keys: keys, topics: map[string]bool{}}
	for i, t := range cfg.Encryption.Topics {
		if t == "" || driver.CheckText(t) != nil {
			return nil, &ConfigError{Field: fmt.Sprintf("Encryption.Topics[%d]", i), Reason: "a topic is non-empty UTF-8 text without NUL"}
		}
		c.topics[t] = true
	}
	for topic, u := range cfg.Workers.units {
		if u.encrypt {
			c.topics[topic] = true
		}
	}
	if len(c.topics) > 0 && keys.Newest() == "" {
		return nil, &ConfigError{Field: "Encryption.Keys", Reason: "encrypted topics need a key"}
	}
	return c, nil
}

// keyring returns a keyring of keys, or a *KeyError.
func keyring(keys []EncryptionKey) (*sealed.Keyring, error) {
	ks := make([]sealed.Key, len(keys))
	for i, k := range keys {
		ks[i] = sealed.Key{ID: k.ID, Key: k.Key}
	}
	ring, err := sealed.NewKeyring(ks)
	var ke *sealed.KeyError
	if errors.As(err, &ke) {
		return nil, &KeyError{Index: ke.Index, ID: ke.ID, Reason: ke.Reason}
	}
	return ring, err
}

// seal encrypts the payload of ins if its topic is encrypted. It refuses
// a payload in clear that has the form of an encrypted one, which a
// worker would take for one.
func (c *crypt) seal(ins *driver.JobInsert) error {
	if c.topics[ins.Topic] {
		ins.Payload = c.keys.Seal(ins.Payload, sealed.AdditionalData(ins.Topic, ins.ID))
		return nil
	}
	if _, ok := sealed.Parse(ins.Payload); ok {
		return &ArgsError{Topic: ins.Topic, Err: errors.New("payload has the form of an encrypted payload (" +
			sealed.Mark + "), but the topic is not encrypted by this client")}
	}
	return nil
}

// rebind gives ins the ID id, encrypting its payload again for it when it
// is encrypted (an encrypted payload is bound to its job's topic and ID):
// a stored callback of a group, inserted again as a new job when the
// group settles again after a retry.
func (c *crypt) rebind(ins *driver.JobInsert, id string) error {
	if _, ok := sealed.Parse(ins.Payload); ok {
		plain, err := open(c.keys, &JobRow{ID: ins.ID, Topic: ins.Topic, Payload: ins.Payload})
		if err != nil {
			return err
		}
		ins.Payload = c.keys.Seal(plain, sealed.AdditionalData(ins.Topic, id))
	}
	ins.ID = id
	return nil
}

// open returns the payload of row, decrypted with keys if it is
// encrypted, or an error matching ErrUnknownKey or ErrDecrypt.
func open(keys *sealed.Keyring, row *JobRow) ([]byte, error) {
	env, ok := sealed.Parse(row.Payload)
	if !ok {
		return row.Payload, nil
	}
	plain, err := keys.Open(env, sealed.AdditionalData(row.Topic, row.ID))
	switch {
	case errors.Is(err, sealed.ErrUnknownKey):
		return nil, &UnknownKeyError{JobID: row.ID, KeyID: env.Key}
	case err != nil:
		return nil, fmt.Errorf("%w: job %s, key %q", ErrDecrypt, row.ID, env.Key)
	}
	return plain, nil
}

// PayloadKeyID returns the ID of the key that encrypted row's payload,
// and false when its payload is not encrypted. An encrypted payload is
// stored, and shown by Get, List, the web API and the sluice command, as
// a JSON object naming its key and holding the ciphertext in base64:
// {"sluice_sealed": "v1", "key": "<ID>", "data": "..."}.
func PayloadKeyID(row *JobRow) (string, bool) {
	env, ok := sealed.Parse(row.Payload)
	if !ok {
		return "", false
	}
	return env.Key, true
}

// DecryptPayload returns row's payload, decrypted with the client's
// Encryption.Keys if it is encrypted (as it is, if not): for a row a
// caller already read, from List say. A payload of a key the client does
// not hold is an *UnknownKeyError (ErrUnknownKey); one that does not
// decrypt, ErrDecrypt.
func (c *Client[TTx]) DecryptPayload(row *JobRow) (json.RawMessage, error) {
	return open(c.cfg.crypt.keys, row)
}

// GetDecrypted returns the job with the given ID as Get does, with its
// payload decrypted if it is encrypted: with keys, or without them with
// the client's own Encryption.Keys. A key that cannot be used is a
// *KeyError (ErrInvalidKey); a payload of a key not among them an
// *UnknownKeyError (ErrUnknownKey); one that does not decrypt, ErrDecrypt.
func (c *Client[TTx]) GetDecrypted(ctx context.Context, id string, keys ...EncryptionKey) (*JobRow, error) {
	ring := c.cfg.crypt.keys
	if len(keys) > 0 {
		var err error
		if ring, err = keyring(keys); err != nil {
			return nil, fmt.Errorf("get job %s: %w", id, err)
		}
	}
	row, err := c.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if row.Payload, err = open(ring, row); err != nil {
		return nil, fmt.Errorf("get job %s: %w", id, err)
	}
	return row, nil
}
