// pg-boss (v12) behind the harness's interface, on Postgres, in the schema
// the spec names (pg-boss's `schema` option), through its public API:
// `insert` for batches, `send` for single jobs, `work` to work them.

import { PgBoss } from "pg-boss";

// queue is the one queue every benchmark job goes to.
const queue = "bench";

// poolSize is the connections of pg-boss's pool: the pool every system of
// the comparison gets (bench/internal/pgpool). pg-boss's own default is 10.
const poolSize = 20;

// tuned are the work() options for throughput (burn_down, bloat): the
// levers pg-boss's documentation gives, set by a sweep on this machine
// (the README has the figures). A worker takes batchSize jobs a fetch,
// runs them, and completes them in one statement; burstWhenBatchFull makes
// it fetch again at once while fetches come back full, rather than after
// pollingIntervalSeconds (its minimum here); localConcurrency is the number
// of such workers.
export const tuned = {
  batchSize: 500,
  localConcurrency: 4,
  burstWhenBatchFull: true,
  pollingIntervalSeconds: 0.5,
};

export function create(spec) {
  return new System(spec);
}

class System {
  constructor(spec) {
    this.spec = spec;
    this.schema = spec.schema;
    // pg-boss's default worker fetches one job every 2 s, which falls
    // behind either latency scenario's rate (4 and 500 jobs a second): the
    // queue would only grow, and no figure would come of it. For latency,
    // then, the worker has the throughput settings below and the instance
    // listens for the queue's notifications, the low-latency delivery
    // pg-boss documents (useListenNotify, a queue's notify).
    this.notify = spec.kind === "latency";
    this.boss = new PgBoss({
      connectionString: spec.db,
      schema: spec.schema,
      max: poolSize,
      useListenNotify: this.notify,
    });
    this.error = null;
    // An error event without a listener would end the process; keep the
    // first and fail the measurement with it.
    this.boss.on("error", (err) => {
      this.error ??= err;
    });
  }

  #check() {
    if (this.error) throw this.error;
  }

  async migrate() {
    await this.boss.start();
    await this.boss.createQueue(queue, { notify: this.notify });
  }

  // insertFinished inserts n completed jobs, as pg-boss keeps them until
  // the queue's deleteAfterSeconds (7 days by default) has passed.
  async insertFinished(n) {
    await this.boss.getDb().executeSql(
      `INSERT INTO ${this.schema}.job (name, data, state, policy, created_on, started_on, completed_on, keep_until)
       SELECT q.name, jsonb_build_object('n', -g), 'completed', q.policy, now(), now(), now(),
              now() + q.deletion_seconds * interval '1 second'
       FROM generate_series(1, $1::int) g, ${this.schema}.queue q WHERE q.name = $2`,
      [n, queue],
    );
  }

  async open(tuned, work) {
    this.tuned = tuned;
    this.work = work;
    await this.boss.start();
  }

  async start() {
    const work = this.work;
    const opts = this.tuned || this.notify ? tuned : {};
    await this.boss.work(queue, opts, async (jobs) => {
      for (const job of jobs) work(job.data.n);
    });
    this.#check();
  }

  // stop stops the instance, letting running handlers finish and their
  // jobs complete, and keeps its pool open for remaining.
  async stop() {
    await this.boss.stop({ graceful: true, close: false, timeout: 60_000 });
    this.#check();
  }

  async enqueue(n) {
    await this.boss.send(queue, { n });
  }

  async enqueueMany(first, size) {
    const jobs = new Array(size);
    for (let i = 0; i < size; i++) jobs[i] = { data: { n: first + i } };
    await this.boss.insert(queue, jobs);
  }

  // remaining counts the jobs not yet in a final state: pg-boss keeps the
  // completed ones.
  async remaining() {
    const { rows } = await this.boss.getDb().executeSql(
      `SELECT count(*)::int AS n FROM ${this.schema}.job
       WHERE name = $1 AND state NOT IN ('completed', 'cancelled', 'failed')`,
      [queue],
    );
    return rows[0].n;
  }

  async close() {
    await this.boss.stop({ graceful: false, close: true });
  }
}
