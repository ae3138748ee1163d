// Package sqlitedriver is the sluice driver for SQLite, on the pure-Go
// modernc.org/sqlite. The SQLite file the service already has becomes its
// job queue: jobs live in one table (sluice_jobs unless [WithTable] says
// otherwise), claimed with a single UPDATE ... RETURNING.
//
//	db, err := sqlitedriver.Open("app.db")
//	if err != nil { ... }
//	drv := sqlitedriver.New(db)
//	if err := drv.Migrate(ctx); err != nil { ... }
//
// The driver's transaction type is *sql.Tx: jobs enqueued through
// [Driver.UnwrapExecutor] commit or roll back with the caller's transaction.
//
// # Opening the database
//
// [Open] opens a file with the settings a queue needs. To open the handle
// yourself (or to check one opened elsewhere), use the data source name
// [DSN] returns, or set the same things:
//
//   - journal_mode(WAL): readers do not block the writer nor the writer
//     readers, and a commit appends to the log instead of rewriting pages.
//     Without it every claim blocks every reader of the file.
//   - synchronous(NORMAL): in WAL mode a commit is written to the log but
//     not fsynced; the log is synced at checkpoints. A crashed or killed
//     process loses nothing; a power loss or operating system crash can lose
//     the last commits, never the database's consistency. FULL, for those
//     who need commits to survive power loss, costs an fsync per enqueue,
//     claim and completion.
//   - busy_timeout(10000): a connection that finds another one writing waits
//     up to 10 s for the lock instead of failing at once with SQLITE_BUSY.
//     The driver serializes its own writes within a process; the timeout
//     covers contention with the service's transactions and other processes.
//   - foreign_keys(1): SQLite leaves foreign keys unenforced unless asked;
//     the service's own tables usually want them.
//   - _txlock=immediate: database/sql transactions begin with BEGIN
//     IMMEDIATE and take the write lock at once, waiting for it under the
//     busy timeout. A deferred transaction (the default) that reads and then
//     writes must upgrade its read lock; if another connection wrote in
//     between, SQLite fails it with SQLITE_BUSY without waiting, since
//     waiting could not help. Transactions passed to UnwrapExecutor should
//     come from a handle opened this way.
//
// With modernc.org/sqlite the pragmas go in the DSN as _pragma=name(value),
// because each applies to one connection and database/sql opens several.
//
// # Connections
//
// [Open] keeps one connection per processor, at least two, and keeps them
// open when idle. The driver never holds a connection while it waits for
// another, so it also works on a handle limited to one connection
// (db.SetMaxOpenConns(1)), as some applications keep to serialize their
// writes: an executor from UnwrapExecutor uses only the caller's
// transaction, and the driver's own writes take its in-process write lock
// before they take a connection. On such a handle, do not call
// [Driver.Migrate] or use [Driver.Executor] from the goroutine that holds
// the only connection in an open transaction: the call waits for that
// transaction to end. (A sluice client uses Executor from its own
// goroutines, which simply wait.)
//
// An application that keeps a second handle for reads beside a
// single-connection write handle (PocketBase keeps data.db so) passes it
// with [WithReadDB]: the driver's reads outside a caller's transaction then
// run there, and never wait behind a transaction holding the writer.
//
// # Schema
//
// [Driver.Migrate] creates the table and its indexes, recording applied
// versions in <table>_migrations. Times are stored as INTEGER microseconds
// since the Unix epoch, UTC. Partial indexes hold only pending jobs (for
// claims) and processing jobs (for rescues and heartbeats), so finished jobs
// never slow the queue down; a partial unique index keeps one live job per
// unique key. [Driver.MigrationStatus] tells which migrations a database
// has, writing nothing, and [Driver.Migrations] returns their SQL for those
// who apply it with their own tool (the sluice command's "migrate sql"
// writes it out for goose, golang-migrate or atlas).
//
// # Notifications
//
// A [Driver] is a driver.Notifier within its process: a listener hears of
// jobs the same Driver value inserts, at once. Jobs inserted by other
// processes are found by polling.
package sqlitedriver
