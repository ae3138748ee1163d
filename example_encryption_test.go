package sluice_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// CardArgs carry what must not be readable in the database.
type CardArgs struct {
	Card string `json:"card"`
}

func (CardArgs) Topic() string { return "charge_card" }

// Payloads of a topic encrypted at rest with AES-GCM: stored as
// ciphertext naming its key, decrypted for the worker, and for a caller
// who holds the key. Keys rotate by appending: the last encrypts, every
// one decrypts.
func ExampleEncryption() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()
	oldKey := sluice.EncryptionKey{ID: "2026-01", Key: []byte("0123456789abcdef0123456789abcdef")}
	newKey := sluice.EncryptionKey{ID: "2026-06", Key: []byte("fedcba9876543210fedcba9876543210")}

	worked := make(chan string)
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[CardArgs]) error {
		worked <- job.Args.Card // decrypted for the worker
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{
		Workers: workers,
		Logger:  quiet,
		Encryption: sluice.Encryption{
			Keys:   []sluice.EncryptionKey{oldKey, newKey},
			Topics: []string{"charge_card"},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.Enqueue(ctx, CardArgs{Card: "4242 4242 4242 4242"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	var stored map[string]string
	_ = json.Unmarshal(res.Job.Payload, &stored) // what Get, List and the dashboard show
	keyID, _ := sluice.PayloadKeyID(res.Job)
	fmt.Println("stored:", stored["sluice_sealed"], "key", keyID)

	plain, err := client.GetDecrypted(ctx, res.Job.ID) // with the client's keys
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("decrypted:", string(plain.Payload))

	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	fmt.Println("worked:", <-worked)
	// Output:
	// stored: v1 key 2026-06
	// decrypted: {"card":"4242 4242 4242 4242"}
	// worked: 4242 4242 4242 4242
}
