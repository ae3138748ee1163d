// Package pgxdriver is the sluice driver for Postgres, on
// github.com/jackc/pgx/v5. The database the service already has becomes its
// job queue: jobs live in one table (sluice_jobs unless [WithTable] says
// otherwise), claimed with UPDATE ... FROM (SELECT ... FOR UPDATE SKIP
// LOCKED), so any number of processes on any number of hosts claim at once
// without waiting for each other.
//
//	pool, err := pgxpool.New(ctx, "postgres://app@db/app")
//	if err != nil { ... }
//	drv := pgxdriver.New(pool)
//	if err := drv.Migrate(ctx); err != nil { ... }
//	client, err := sluice.NewClient(drv, &sluice.Config{Workers: workers})
//
// The driver's transaction type is pgx.Tx: jobs enqueued through
// [Driver.UnwrapExecutor], and completions made through it, commit or roll
// back with the caller's own transaction, from any pool or connection on the
// same database. pgx does not roll a transaction back when its context is
// cancelled; after an operation fails, roll the transaction back.
//
// # Options
//
//   - [WithSchema] puts the table in a schema of its own, created by
//     Migrate. Without it the table name is unqualified and resolves through
//     the connections' search_path.
//   - [WithTable] renames the table (and, after it, its migrations table and
//     indexes).
//   - [WithListenURL] gives LISTEN a direct connection of its own, for
//     pools behind a pooler in transaction mode (see below).
//   - [WithoutListen] turns LISTEN off: clients poll.
//
// An invalid name given to an option does not panic: Migrate and every
// operation return the error.
//
// # Schema
//
// [Driver.Migrate] creates the table and its indexes, recording applied
// versions in <table>_migrations. It runs in one transaction holding
// pg_advisory_xact_lock on a key derived from the table's name, so processes
// migrating at once take turns; it is idempotent. IDs are uuid, payloads
// and results jsonb, times timestamptz, attempt errors a jsonb array.
//
// Partial indexes hold only pending jobs (for claims, in claim order) and
// the jobs holding a lease, which are the processing ones (for rescues and
// heartbeats), so the cost of a claim does not grow with finished jobs; a
// partial unique index keeps one live job per unique key. Claims, rescues
// and completions reach their rows through the primary key in a shape no
// plan can turn into a scan of the whole table, whatever the statistics
// say; the statistics still choose whether a claim takes the first
// pending jobs from the pending index or reads and sorts all of them, so a
// running client analyzes the table when the planner's estimate of a
// queue's pending jobs is far below the counts ([Driver.Maintain]). The table is created with fillfactor 90 and autovacuum scale
// factors of 0.01 (vacuum) and 0.02 (analyze): a queue table is updated far
// more than it grows, and its live part is small next to its dead tuples.
// Finished jobs stay until something deletes them.
//
// Every claim and completion leaves a dead row version, and a dead entry
// in the pending index that later claims step over until a vacuum removes
// it. A progress write leaves a dead row version too (at most one per
// running job per progress interval), but no index entry: the progress
// column is in no index, so the update is HOT when the page has room.
// Autovacuum visits a table at most once a minute, and never on a server
// with autovacuum off, so a running client vacuums the table itself when
// dead tuples pile up ([Driver.Maintain]; [WithoutVacuum] turns it off).
//
// # Running the migrations with another tool
//
// The migrations are plain SQL files in the migrations directory of this
// package, named NNNN_description.sql, one per version. They contain
// placeholders: {t} for the table's quoted, qualified name, {t_clients},
// {t_counts} and {t_count_log} for the qualified tables of client records
// and counts, {t_claim_idx}, {t_lease_idx}, {t_unique_key_idx},
// {t_status_idx}, {t_finalized_idx}, {t_failed_idx} for its indexes' names
// as CREATE INDEX takes them, {q_lease_idx} (and so on) for the same names
// qualified by the schema, as DROP INDEX takes them, and {f_count_ins} and
// {n_count_ins} (and so on) for the qualified functions and the trigger
// names of the counting triggers.
// [Driver.MigrationStatus] tells which of them a database has, writing
// nothing. [Driver.Migrations] returns them with the placeholders filled in
// for a driver's options (the sluice command's "migrate sql" writes them
// out); write those out as goose, golang-migrate or atlas
// migrations (goose wants a "-- +goose Up" line on top, and the functions of
// 0005_counts.sql, whose bodies hold semicolons, between "-- +goose
// StatementBegin" and "-- +goose StatementEnd"; golang-migrate files named
// NNNN_name.up.sql), and do not call Migrate. Every statement is
// idempotent (IF NOT EXISTS, OR REPLACE), so a database migrated either way
// can later be migrated the other.
//
// # Inserts
//
// Jobs without a unique key are inserted with one INSERT over arrays
// (unnest), or with COPY from [CopyThreshold] jobs on, in one transaction
// with everything else of the call. A unique job is inserted with INSERT ...
// ON CONFLICT on the partial unique index, reading the live job it
// conflicts with. A job whose ID exists is an error, and nothing of the call
// is inserted.
//
// # LISTEN/NOTIFY
//
// Every insert has pg_notify run once per queue, and a notification is
// delivered only for jobs that were committed: an insert in a caller's
// transaction notifies in that transaction, and one on the pool notifies
// just after its commit, in a transaction of its own (a notifying commit
// holds a server-wide lock until its WAL flush, which would keep
// concurrent enqueues from sharing one). [Driver.Listen]
// holds one connection of its own (opened with the pool's configuration,
// or [WithListenURL]'s, not taken from the pool) in LISTEN on
// [Driver.Channel], and reconnects on its own if it drops. Notifications
// are hints; a client still polls, and polls alone when Listen fails.
//
// # Behind PgBouncer
//
// The driver keeps no state in a session between transactions, so its
// pool may go through a pooler in transaction mode (PgBouncer's
// pool_mode=transaction): every operation is one statement, one batch of
// statements sent with a single Sync, or one transaction; its settings are
// local to their transaction (set_config(..., true)); its advisory locks
// are transaction-level (pg_advisory_xact_lock); it makes no temporary
// table and prepares no statement by name itself. Three things remain:
//
//   - pgx's default query mode prepares every statement by name on its
//     connection, which PgBouncer keeps across server connections only
//     from version 1.21 on, with max_prepared_statements above 0. With an
//     older PgBouncer, or that setting at 0, set the pool's
//     default_query_exec_mode to cache_describe (in the connection string
//     or pgx.ConnConfig.DefaultQueryExecMode): statements are then sent
//     unnamed, with their parameter and result types described once per
//     connection and cached. exec and simple_protocol work too.
//     describe_exec must not be used: it describes a statement and runs it
//     in two round trips, which the pooler may send to different server
//     connections, so that it runs whichever statement the second one last
//     described (through PgBouncer 1.18, three runs in four of a test
//     statement returned another client's result).
//   - LISTEN needs a session. [Driver.Listen] finds that its connection
//     goes through a pooler and returns [ErrListenThroughPooler] rather than
//     LISTEN there (which would leave the LISTEN behind on a server
//     connection of the pool); give it a direct connection with
//     [WithListenURL], or let clients poll.
//   - A table in a schema other than the connections' default needs
//     [WithSchema]: PgBouncer refuses a search_path set when connecting
//     (or ignores it, among ignore_startup_parameters).
//
// docs/many-workers.md in the repository says how to deploy many workers
// through PgBouncer, and what polling costs.
package pgxdriver
