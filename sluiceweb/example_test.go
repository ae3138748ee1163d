package sluiceweb_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/sluiceweb"
)

// Mounting the API and dashboard under /sluice/ of a service's own mux,
// with an authorization of its own, and enqueueing a job over HTTP.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "sluiceweb-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sqlitedriver.Open(filepath.Join(dir, "jobs.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	// An insert-only client: the API enqueues any topic, for workers in
	// other processes.
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}

	h, err := sluiceweb.New(client, &sluiceweb.Options{
		Authorize: func(r *http.Request, a sluiceweb.Action) error {
			if a.Kind != sluiceweb.ActionRead && r.Header.Get("X-Role") != "operator" {
				return fmt.Errorf("%s needs the operator role", a.Name)
			}
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/sluice/", http.StripPrefix("/sluice", h))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer h.Close() // with an http.Server: srv.RegisterOnShutdown(h.Close)

	req, _ := http.NewRequestWithContext(context.Background(), "POST", srv.URL+"/sluice/api/jobs",
		strings.NewReader(`{"topic": "mail_digest", "payload": {"to": "ada@example.com"}, "delay": "1h"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Role", "operator")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	res.Body.Close()
	fmt.Println(res.Status)

	res, err = http.Post(srv.URL+"/sluice/api/jobs", "application/json", strings.NewReader(`{"topic": "mail_digest"}`))
	if err != nil {
		log.Fatal(err)
	}
	res.Body.Close()
	fmt.Println(res.Status, res.Header.Get("Content-Type"))
	// Output:
	// 201 Created
	// 403 Forbidden application/problem+json
}
