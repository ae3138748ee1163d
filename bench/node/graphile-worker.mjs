// graphile-worker behind the harness's interface, on Postgres, in the
// schema the spec names (graphile-worker's `schema` option), through its
// public API: WorkerUtils' addJobs for batches and addJob for single jobs,
// run() to work them.
//
// With its throughput settings (burn_down, bloat) the jobs are worked the
// way graphile-worker's own performance test works them: in several worker
// processes at once, forked here (graphile-worker-process.mjs), each
// reporting the jobs it starts; this process only counts. Otherwise one
// runner works in this process with graphile-worker's defaults.

import { fork } from "node:child_process";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { Logger, makeWorkerUtils, run, runMigrations } from "graphile-worker";
import pg from "pg";

// task names the benchmark jobs.
export const task = "bench";

// logger drops graphile-worker's informational lines and writes its errors
// to standard error, away from the BENCH lines on standard output.
export const logger = new Logger(() => (level, message) => {
  if (level === "error") process.stderr.write(`graphile-worker: ${message}\n`);
});

// processes is the number of worker processes of graphile-worker's
// performance test (perfTest/run.js: PARALLELISM), each run with
// tunedPreset, its perfTest/graphile.config.js: 24 jobs at once, a pool of
// 25 connections, a local queue of 500 jobs fetched in one query, and
// completions batched. The README says why these.
export const processes = 4;
export const tunedPreset = {
  worker: {
    concurrentJobs: 24,
    maxPoolSize: 25,
    localQueue: { size: 500, refetchDelay: { durationMs: 10 } },
    completeJobBatchDelay: 0,
    failJobBatchDelay: 0,
    gracefulShutdownAbortTimeout: 2500,
  },
};

// poolSize is the connections of the pool this process works through: the
// pool every system of the comparison gets (bench/internal/pgpool).
// graphile-worker's own default is 10.
const poolSize = 20;

// insertChunk bounds the jobs one add_jobs call of insertFinished carries.
const insertChunk = 50_000;

export function create(spec) {
  return new System(spec);
}

class System {
  constructor(spec) {
    this.schema = spec.schema;
    this.spec = spec;
    this.pool = new pg.Pool({ connectionString: spec.db, max: poolSize });
    // graphile-worker asks for both handlers: an idle client's error then
    // reaches the next query rather than ending the process.
    this.pool.on("error", () => {});
    this.pool.on("connect", (client) => client.on("error", () => {}));
    this.utils = null;
    this.runner = null;
    this.procs = [];
  }

  #options(extra) {
    return { pgPool: this.pool, schema: this.schema, logger, ...extra };
  }

  async migrate() {
    await runMigrations(this.#options({}));
  }

  // insertFinished adds n jobs through graphile-worker's add_jobs and then
  // deletes them, as graphile-worker deletes a job when it succeeds: it
  // keeps no finished rows, so what finished jobs leave behind is the
  // churn of the table and its indexes.
  async insertFinished(n) {
    for (let done = 0; done < n; done += insertChunk) {
      const size = Math.min(insertChunk, n - done);
      await this.pool.query(
        `SELECT count(*) FROM ${this.schema}.add_jobs(ARRAY(
           SELECT ROW('bench', json_build_object('n', -g), NULL, NULL, NULL, NULL, NULL, NULL)::${this.schema}.job_spec
           FROM generate_series(1, $1::int) g))`,
        [size],
      );
    }
    await this.pool.query(`DELETE FROM ${this.schema}._private_jobs`);
  }

  async open(tuned, work) {
    this.utils = await makeWorkerUtils(this.#options({}));
    this.tuned = tuned;
    this.work = work;
    if (work && tuned) {
      await this.#forkWorkers();
    }
  }

  async start() {
    if (this.procs.length > 0) {
      await Promise.all(this.procs.map((p) => p.request({ type: "start" }, "started")));
      return;
    }
    const work = this.work;
    this.runner = await run(this.#options({ noHandleSignals: true, taskList: { [task]: (payload) => work(payload.n) } }));
  }

  async stop() {
    if (this.procs.length > 0) {
      const stopped = await Promise.all(this.procs.map((p) => p.request({ type: "stop" }, "stopped")));
      this.maxRSS = stopped.reduce((sum, m) => sum + m.maxRSS, 0);
      await Promise.all(this.procs.map((p) => p.exited));
      this.procs = [];
      return;
    }
    await this.runner.stop();
    await this.runner.promise;
    this.runner = null;
    // Without completeJobBatchDelay a worker does not wait for its job's
    // completion, nor does the runner's stop: the last DELETEs may still
    // be on their way. They are on this pool, so it is idle once they
    // have landed, as it would be before an application ended it.
    while (this.pool.totalCount > this.pool.idleCount || this.pool.waitingCount > 0) {
      await sleep(1);
    }
  }

  // workersMaxRSS is the sum of the worker processes' peak resident set
  // sizes, in KiB, as each reported it when it stopped.
  workersMaxRSS() {
    return this.maxRSS ?? 0;
  }

  async enqueue(n) {
    await this.utils.addJob(task, { n });
  }

  async enqueueMany(first, size) {
    const specs = new Array(size);
    for (let i = 0; i < size; i++) specs[i] = { identifier: task, payload: { n: first + i } };
    await this.utils.addJobs(specs);
  }

  // remaining counts the jobs left in the table: graphile-worker deletes a
  // job when it succeeds.
  async remaining() {
    const { rows } = await this.pool.query(`SELECT count(*)::int AS n FROM ${this.schema}._private_jobs`);
    return rows[0].n;
  }

  async close() {
    for (const p of this.procs) p.child.kill();
    await this.runner?.stop().catch(() => {});
    await this.utils?.release();
    await this.pool.end();
  }

  // forkWorkers starts the worker processes of the performance test, each
  // ready to run graphile-worker when start asks, and waits until every
  // one has loaded it.
  async #forkWorkers() {
    const url = new URL("./graphile-worker-process.mjs", import.meta.url);
    for (let i = 0; i < processes; i++) {
      const child = fork(url, [], {
        execPath: process.execPath,
        stdio: ["ignore", "ignore", "inherit", "ipc"],
      });
      this.procs.push(new WorkerProcess(child, this.work));
    }
    const init = { type: "init", db: this.spec.db, schema: this.schema };
    await Promise.all(this.procs.map((p) => p.request(init, "ready")));
  }
}

// WorkerProcess is one forked worker process and the messages it sends:
// the numbers of the jobs it started, in batches, and the answers to
// requests.
class WorkerProcess {
  constructor(child, work) {
    this.child = child;
    this.waiting = new Map(); // answer type -> {resolve, reject}
    this.failure = null;
    child.on("message", (m) => {
      if (m.type === "jobs") {
        for (const n of m.ns) work(n);
        return;
      }
      if (m.type === "error") {
        this.#fail(new Error(`worker process: ${m.message}`));
        return;
      }
      const w = this.waiting.get(m.type);
      this.waiting.delete(m.type);
      w?.resolve(m);
    });
    this.exited = once(child, "exit").then(([code, signal]) => {
      if (code !== 0) this.#fail(new Error(`worker process exited: ${signal ?? `status ${code}`}`));
    });
  }

  #fail(err) {
    this.failure ??= err;
    for (const w of this.waiting.values()) w.reject(err);
    this.waiting.clear();
  }

  // request sends msg and waits for the answer of type answer.
  request(msg, answer) {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.waiting.set(answer, { resolve, reject });
      this.child.send(msg);
    });
  }
}
