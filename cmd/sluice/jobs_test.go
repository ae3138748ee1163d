package main_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// listOut is list's --json output.
type listOut struct {
	Jobs       []*sluice.JobRow `json:"items"`
	Total      int              `json:"total"`
	NextCursor string           `json:"next_cursor"`
}

// enqueueOut is enqueue's --json output.
type enqueueOut struct {
	Job       *sluice.JobRow `json:"job"`
	Duplicate bool           `json:"duplicate"`
}

func (d *db) enqueue(t *testing.T, args ...string) *sluice.JobRow {
	t.Helper()
	res := decode[enqueueOut](t, d.run(t, append([]string{"enqueue", "--json"}, args...)...).ok(t))
	require.False(t, res.Duplicate)
	return res.Job
}

func TestEnqueueListGet(t *testing.T) {
	t.Parallel()
	eachDB(t, true, func(t *testing.T, d *db) {
		runAt := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		mail := d.enqueue(t, "mail", `{"to": "a@example.com"}`, "--queue", "mailers", "--priority", "2",
			"--run-at", runAt.Format(time.RFC3339), "--tag", "a,b", "--meta", "tenant=acme", "--max-retries", "5",
			"--unique-key", "mail-a")
		require.Equal(t, "mail", mail.Topic)
		require.Equal(t, "mailers", mail.Queue)
		require.Equal(t, 2, mail.Priority)
		require.Equal(t, 5, mail.MaxRetries)
		require.True(t, runAt.Equal(mail.RunAt))
		require.Equal(t, []string{"a", "b"}, mail.Tags)
		require.JSONEq(t, `{"tenant": "acme"}`, string(mail.Metadata))
		require.JSONEq(t, `{"to": "a@example.com"}`, string(mail.Payload))

		// A unique key already live: nothing is enqueued, and it says so.
		dup := decode[enqueueOut](t, d.run(t, "enqueue", "--json", "mail", "--unique-key", "mail-a").ok(t))
		require.True(t, dup.Duplicate)
		require.Equal(t, mail.ID, dup.Job.ID)

		// The payload from stdin; flags after the arguments.
		r := runBin(t, nil, `{"n": 1}`, append(append([]string{}, d.flags...), "enqueue", "report", "-", "--json")...)
		report := decode[enqueueOut](t, r.ok(t)).Job
		require.JSONEq(t, `{"n": 1}`, string(report.Payload))
		plain := d.enqueue(t, "report")
		require.JSONEq(t, `{}`, string(plain.Payload))

		all := decode[listOut](t, d.run(t, "list", "--json").ok(t))
		require.Equal(t, 3, all.Total)
		require.Equal(t, []string{mail.ID, report.ID, plain.ID}, ids(all.Jobs))

		for _, tc := range []struct {
			args []string
			want []string
		}{
			{[]string{"--topic", "report"}, []string{report.ID, plain.ID}},
			{[]string{"--queue", "mailers"}, []string{mail.ID}},
			{[]string{"--tag", "a", "--tag", "b"}, []string{mail.ID}},
			{[]string{"--tag", "a,zzz", "--any-tag"}, []string{mail.ID}},
			{[]string{"--tag", "a,zzz"}, nil},
			{[]string{"--meta", "tenant=acme"}, []string{mail.ID}},
			{[]string{"--payload", "to=a@example.com"}, []string{mail.ID}},
			{[]string{"--payload", "n=1"}, []string{report.ID}},
			{[]string{"--payload", `n="1"`}, nil},
			{[]string{"--unique-key", "mail-a"}, []string{mail.ID}},
			{[]string{"--status", "pending", "--run-at-from", "30m"}, []string{mail.ID}},
			{[]string{"--run-at-before", "30m"}, []string{report.ID, plain.ID}},
			{[]string{"--created-from", "-1h", "--created-before", "1m"}, []string{mail.ID, report.ID, plain.ID}},
			{[]string{"--created-before", "2000-01-01"}, nil},
			{[]string{"--status", "failed,cancelled"}, nil},
			{[]string{"--newest-first"}, []string{plain.ID, report.ID, mail.ID}},
			{[]string{"--offset", "2"}, []string{plain.ID}},
		} {
			got := decode[listOut](t, d.run(t, append([]string{"list", "--json"}, tc.args...)...).ok(t))
			require.Equal(t, tc.want, ids(got.Jobs), "%q", tc.args)
		}

		// Paging by cursor.
		page1 := decode[listOut](t, d.run(t, "list", "--json", "--limit", "2").ok(t))
		require.Equal(t, []string{mail.ID, report.ID}, ids(page1.Jobs))
		require.Equal(t, 3, page1.Total)
		require.NotEmpty(t, page1.NextCursor)
		page2 := decode[listOut](t, d.run(t, "list", "--json", "--limit", "2", "--cursor", page1.NextCursor).ok(t))
		require.Equal(t, []string{plain.ID}, ids(page2.Jobs))
		require.Empty(t, page2.NextCursor)

		// The table.
		table := d.run(t, "list", "--limit", "2").ok(t)
		require.Contains(t, table, "ID")
		require.Contains(t, table, mail.ID)
		require.Contains(t, table, "2 of 3 jobs; next page: --cursor "+page1.NextCursor)

		got := decode[*sluice.JobRow](t, d.run(t, "get", mail.ID, "--json").ok(t))
		require.Equal(t, mail.ID, got.ID)
		require.Equal(t, sluice.StatusPending, got.Status)
		text := d.run(t, "get", mail.ID).ok(t)
		require.Contains(t, text, "a@example.com")
		require.Contains(t, text, "tenant")

		// Several IDs, one missing: the others are shown, the exit code is 3.
		r = d.run(t, "get", "--json", mail.ID, "01900000-0000-7000-8000-000000000000", report.ID)
		r.fails(t, 3, "no job 01900000-0000-7000-8000-000000000000")
		require.Equal(t, []string{mail.ID, report.ID}, ids(decode[[]*sluice.JobRow](t, r.stdout)))
		d.run(t, "get").fails(t, 2, "job ID")

		// The command works no job: all three are still pending, never tried.
		for _, j := range decode[listOut](t, d.run(t, "list", "--json").ok(t)).Jobs {
			require.Equal(t, sluice.StatusPending, j.Status)
			require.Zero(t, j.Attempt)
		}
	})
}

func ids(rows []*sluice.JobRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.ID)
	}
	return out
}

// statsOut is stats' --json output.
type statsOut struct {
	Total    int                                 `json:"total"`
	ByStatus map[sluice.JobStatus]int            `json:"by_status"`
	ByTopic  map[string]map[sluice.JobStatus]int `json:"by_topic"`
	ByQueue  map[string]map[sluice.JobStatus]int `json:"by_queue"`
	Failed   int                                 `json:"failed"`
	// SuccessRate is nil when nothing finished in the window.
	SuccessRate *float64 `json:"success_rate"`
}

func TestStatsAndExplain(t *testing.T) {
	t.Parallel()
	eachDB(t, true, func(t *testing.T, d *db) {
		a := d.enqueue(t, "a")
		d.enqueue(t, "a", "--queue", "other")
		b := d.enqueue(t, "b", "--run-at", "1h")
		d.run(t, "cancel", b.ID).ok(t)

		st := decode[statsOut](t, d.run(t, "stats", "--json").ok(t))
		require.Equal(t, 3, st.Total)
		require.Equal(t, map[sluice.JobStatus]int{sluice.StatusPending: 2, sluice.StatusCancelled: 1}, st.ByStatus)
		require.Equal(t, 2, st.ByTopic["a"][sluice.StatusPending])
		require.Equal(t, 1, st.ByQueue["other"][sluice.StatusPending])
		st = decode[statsOut](t, d.run(t, "stats", "--json", "--topic", "b").ok(t))
		require.Equal(t, 1, st.Total)
		st = decode[statsOut](t, d.run(t, "stats", "--json", "--queue", "other").ok(t))
		require.Equal(t, 1, st.Total)
		table := d.run(t, "stats").ok(t)
		require.Contains(t, table, "PENDING")
		require.Contains(t, table, "other")

		ex := decode[struct {
			Job    *sluice.JobRow       `json:"job"`
			Reason sluice.ExplainReason `json:"reason"`
			Text   string               `json:"text"`
		}](t, d.run(t, "explain", "--json", a.ID).ok(t))
		require.Equal(t, a.ID, ex.Job.ID)
		require.Equal(t, sluice.ReasonNoWorker, ex.Reason)
		require.NotEmpty(t, ex.Text)
		require.Contains(t, d.run(t, "explain", b.ID).ok(t), string(sluice.ReasonFinished))
		d.run(t, "explain").fails(t, 2, "one job ID")
		d.run(t, "stats", "--window", "-1h").fails(t, 2, "negative")
		d.run(t, "stats", "extra").fails(t, 2, "no arguments")
	})
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	eachDB(t, true, func(t *testing.T, d *db) {
		d.run(t, "frobnicate").fails(t, 2, `unknown verb "frobnicate"`)
		d.run(t, "list", "--status", "bogus").fails(t, 2, "bogus")
		d.run(t, "list", "--created-from", "yesterday").fails(t, 2, "RFC 3339")
		d.run(t, "list", "--limit", "0").fails(t, 2, "--limit")
		d.run(t, "list", "--limit", "20000").fails(t, 2, "Limit")
		d.run(t, "list", "--cursor", "garbage").fails(t, 2, "cursor")
		d.run(t, "list", "--meta", "novalue").fails(t, 2, "key=value")
		d.run(t, "list", "--payload", "a..b=1").fails(t, 2, `Payload["a..b"]`)
		d.run(t, "cancel", "--payload", "a b=1").fails(t, 2, `Payload["a b"]`)
		d.run(t, "list", "--no-such-flag").fails(t, 2, "no-such-flag")
		d.run(t, "list", "stray").fails(t, 2, "no arguments")
		// Bad enqueues write nothing.
		d.run(t, "enqueue", "t", "{not json").fails(t, 2, "not JSON")
		d.run(t, "enqueue", "t", "--queue", "bad queue!").fails(t, 2, "Queues")
		d.run(t, "enqueue", "t", "--metadata", "[1]").fails(t, 2, "JSON object")
		d.run(t, "enqueue", "t", "--max-retries", "-1").fails(t, 2, "--max-retries must not be negative (0 means no retries)")
		d.run(t, "enqueue", "t", "--payload-file", "/no/such/file").fails(t, 2, "payload")
		d.run(t, "enqueue", "t", "{}", "--payload-file", "-").fails(t, 2, "not both")
		d.run(t, "enqueue", "", "{}").fails(t, 2, "topic")
		d.run(t, "enqueue", "t", strings.Repeat("[", 10)+"]").fails(t, 2, "not JSON")
		require.Zero(t, decode[listOut](t, d.run(t, "list", "--json").ok(t)).Total)
		// --help is not an error: the verb's flags, on stdout.
		r := d.run(t, "list", "--help")
		require.Equal(t, 0, r.code)
		require.Contains(t, r.stdout, "Usage: sluice list")
		require.Contains(t, r.stdout, "-topic")
		require.Empty(t, r.stderr)
	})
}

func TestDatabaseChoice(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/env.db"
	runBin(t, nil, "").fails(t, 2, "Usage")
	runBin(t, nil, "", "list").fails(t, 2, "no database")
	runBin(t, nil, "", "--database-url", "mysql://localhost/x", "list").fails(t, 2, `scheme "mysql"`)
	runBin(t, nil, "", "--database-url", "postgres://%zz", "list").fails(t, 2, "database URL")
	runBin(t, nil, "", "--database-url", "postgres://nobody@127.0.0.1:1/x?connect_timeout=2", "list").fails(t, 1, "connect")
	runBin(t, nil, "", "--database-url", path, "--schema", "s", "list").fails(t, 2, "--schema is for Postgres")
	runBin(t, nil, "", "--database-url", "sqlite:", "list").fails(t, 2, "without a file path")

	// SLUICE_DATABASE_URL, then DATABASE_URL; the flag wins over both.
	runBin(t, []string{"DATABASE_URL=" + path}, "", "migrate", "up").ok(t)
	runBin(t, []string{"SLUICE_DATABASE_URL=sqlite:" + path}, "", "enqueue", "t").ok(t)
	r := runBin(t, []string{"SLUICE_DATABASE_URL=" + path, "DATABASE_URL=/no/such.db"}, "", "list", "--json")
	require.Equal(t, 1, decode[listOut](t, r.ok(t)).Total)
	runBin(t, []string{"SLUICE_DATABASE_URL=/no/such.db"}, "", "--database-url", "sqlite://"+path, "list").ok(t)
	// A custom table.
	runBin(t, nil, "", "--database-url", path, "--table", "other_jobs", "migrate", "up").ok(t)
	r = runBin(t, nil, "", "--database-url", path, "--table", "other_jobs", "list", "--json")
	require.Zero(t, decode[listOut](t, r.ok(t)).Total)
	runBin(t, nil, "", "--database-url", path, "--table", "bad name", "list").fails(t, 1, "invalid table name")
}

// TestUsageError reports bad usage in one line and points to the help,
// without printing the help itself.
func TestUsageError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "--no-such-flag"}, "sluice: flag provided but not defined: -no-such-flag\nRun \"sluice list --help\" for usage.\n"},
		{[]string{"--no-such-flag", "list"}, "sluice: flag provided but not defined: -no-such-flag\nRun \"sluice --help\" for usage.\n"},
		{[]string{"frobnicate"}, "sluice: unknown verb \"frobnicate\"\nRun \"sluice --help\" for usage.\n"},
		{[]string{"get", "not-a-uuid"}, "sluice: \"not-a-uuid\" is not a job ID (a UUID such as 01937c2e-5f0a-7d3b-9c1e-2a4b6c8d0e1f)\n" +
			"Run \"sluice get --help\" for usage.\n"},
	} {
		r := runBin(t, nil, "", tc.args...)
		require.Equal(t, 2, r.code, "%q", tc.args)
		require.Equal(t, tc.want, r.stderr, "%q", tc.args)
		require.Empty(t, r.stdout, "%q", tc.args)
	}
}

// TestJobIDs refuses a malformed job ID as bad usage, before reading or
// writing anything, and reports an unknown one as "no job <id>".
func TestJobIDs(t *testing.T) {
	t.Parallel()
	eachDB(t, true, func(t *testing.T, d *db) {
		job := d.enqueue(t, "t")
		const unknown = "01900000-0000-7000-8000-000000000000"
		for _, verb := range []string{"get", "explain", "cancel", "requeue", "retry", "delete"} {
			d.run(t, verb, "not-a-uuid").fails(t, 2, `"not-a-uuid" is not a job ID`)
			d.run(t, verb, "{"+unknown+"}").fails(t, 2, "is not a job ID")
			r := d.run(t, verb, unknown)
			require.Equal(t, 3, r.code, verb)
			require.Equal(t, "sluice: no job "+unknown+"\n", r.stderr, verb)
		}
		// One malformed ID among good ones: nothing is done to any.
		d.run(t, "cancel", job.ID, "nope").fails(t, 2, `"nope" is not a job ID`)
		row := decode[*sluice.JobRow](t, d.run(t, "get", "--json", job.ID).ok(t))
		require.Equal(t, sluice.StatusPending, row.Status)
	})
}

// TestEnqueueMaxRetries takes --max-retries as the web API takes
// max_retries: 0 is none, the flag's absence the default.
func TestEnqueueMaxRetries(t *testing.T) {
	t.Parallel()
	eachDB(t, true, func(t *testing.T, d *db) {
		require.Equal(t, 3, d.enqueue(t, "t").MaxRetries, "the default")
		require.Equal(t, 0, d.enqueue(t, "t", "--max-retries", "0").MaxRetries, "none")
		require.Equal(t, 7, d.enqueue(t, "t", "--max-retries", "7").MaxRetries)
		require.Contains(t, d.run(t, "get", d.enqueue(t, "t", "--max-retries", "0").ID).ok(t), "0 of at most 1")
	})
}

// TestCounts says "1 job", not "1 jobs".
func TestCounts(t *testing.T) {
	t.Parallel()
	eachDB(t, true, func(t *testing.T, d *db) {
		d.enqueue(t, "t")
		require.True(t, strings.HasSuffix(d.run(t, "list").ok(t), "\n1 of 1 job\n"))
		d.enqueue(t, "t")
		require.True(t, strings.HasSuffix(d.run(t, "list").ok(t), "\n2 of 2 jobs\n"))
		require.True(t, strings.HasSuffix(d.run(t, "list", "--limit", "1").ok(t), "\n1 of 2 jobs; next page: --cursor "+
			decode[listOut](t, d.run(t, "list", "--json", "--limit", "1").ok(t)).NextCursor+"\n"))
		d.enqueue(t, "u")
		require.Equal(t, "cancelled 1 job\n", d.run(t, "cancel", "--topic", "u").ok(t))
		require.Equal(t, "cancelled 0 jobs\n", d.run(t, "cancel", "--topic", "u").ok(t))
		require.Equal(t, "deleted 2 jobs\n", d.run(t, "delete", "--topic", "t").ok(t))
	})
}
