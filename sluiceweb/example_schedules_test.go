package sluiceweb_test

import (
	"database/sql"
	"encoding/json"
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

// Storing a schedule over HTTP, and what a malformed one answers. A job's
// tags, metadata and logs travel the same way: see docs/web.md.
func ExampleNew_schedules() {
	client, done := exampleClient()
	defer done()
	h, err := sluiceweb.New(client, &sluiceweb.Options{Authorize: sluiceweb.AllowAll})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()

	post := func(body string) map[string]any {
		res, err := http.Post(srv.URL+"/api/schedules", "application/json", strings.NewReader(body))
		if err != nil {
			log.Fatal(err)
		}
		defer res.Body.Close()
		var answer map[string]any
		if err := json.NewDecoder(res.Body).Decode(&answer); err != nil {
			log.Fatal(err)
		}
		fmt.Println(strings.TrimSpace(res.Status + " " + res.Header.Get("Location")))
		return answer
	}
	s := post(`{"name": "daily-digest", "cron": "0 9 * * *", "time_zone": "Europe/Paris",
		"topic": "mail_digest", "payload": {"to": "team@example.com"}}`)
	fmt.Println(s["name"], s["enabled"], s["catch_up"], s["next_run_at"] != nil)

	p := post(`{"name": "nightly", "cron": "0 25 * * *", "topic": "cleanup"}`)
	fmt.Println(p["code"], p["field"])
	// Output:
	// 201 Created schedules/daily-digest
	// daily-digest true once true
	// 400 Bad Request
	// invalid_schedule cron
}

// exampleClient returns an insert-only client over a new SQLite file, and
// a function that removes it.
func exampleClient() (*sluice.Client[*sql.Tx], func()) {
	dir, err := os.MkdirTemp("", "sluiceweb-example-")
	if err != nil {
		log.Fatal(err)
	}
	db, err := sqlitedriver.Open(filepath.Join(dir, "jobs.db"))
	if err != nil {
		log.Fatal(err)
	}
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	return client, func() {
		db.Close()
		os.RemoveAll(dir)
	}
}
