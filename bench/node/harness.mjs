// The measurement of bench/harness (harness.go), for the systems that run on
// Node. A child program of the comparison runs one phase of one measurement:
//
//	<node> bench/node/child.mjs -phase prepare|measure -spec '<Spec JSON>'
//
// and prints the same BENCH lines as the Go children. Each system is a module
// exporting `create(spec)`, which returns an object with the methods of
// harness.System (migrate, insertFinished, open, start, stop, enqueue,
// enqueueMany, remaining, close) and, for a system that works in processes
// of its own, workersMaxRSS() (KiB). The logic here follows harness.go line
// for line where it can; where it cannot (goroutines), the comment says what
// takes their place.

import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";

// backlogBatch is how many jobs one bulk insert of the backlog carries.
const backlogBatch = 5000;
// stopTimeoutMs bounds Stop: running jobs are no-ops.
const stopTimeoutMs = 60_000;
// latencyWaitMs bounds the wait for the last samples' jobs to start.
const latencyWaitMs = 30_000;

// parseArgs reads -phase and -spec as Go's flag package accepts them: one or
// two dashes, the value after "=" or as the next argument.
export function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const m = /^--?(phase|spec)(?:=(.*))?$/s.exec(argv[i]);
    if (!m) {
      throw new Error(`child: unexpected argument ${JSON.stringify(argv[i])}`);
    }
    if (m[2] !== undefined) {
      out[m[1]] = m[2];
    } else if (i + 1 < argv.length) {
      out[m[1]] = argv[++i];
    } else {
      throw new Error(`child: flag needs an argument: -${m[1]}`);
    }
  }
  if (out.spec === undefined) {
    throw new Error("child: no -spec");
  }
  let spec;
  try {
    spec = JSON.parse(out.spec);
  } catch (err) {
    throw new Error(`child: spec: ${err.message}`);
  }
  return { phase: out.phase ?? "", spec };
}

// durationMs converts a Go time.Duration, which JSON carries in
// nanoseconds, to milliseconds.
const durationMs = (ns) => (ns ?? 0) / 1e6;

// childMain runs one phase of one measurement for the system that
// systems[spec.system + "/" + spec.driver] creates, writing the figures with
// write.
export async function childMain(argv, systems, write) {
  const { phase, spec } = parseArgs(argv);
  const key = `${spec.system}/${spec.driver}`;
  const load = systems[key];
  if (!load) {
    throw new Error(`child: no system ${spec.system} on ${spec.driver} here`);
  }
  const sys = (await load()).create(spec);
  try {
    if (phase === "prepare") {
      await prepare(sys, spec);
    } else if (phase === "measure") {
      await measure(sys, spec, write);
    } else {
      throw new Error(`unknown phase ${JSON.stringify(phase)}`);
    }
  } catch (err) {
    err.message = `${phase} ${key} ${spec.scenario}: ${err.message}`;
    throw err;
  } finally {
    await sys.close();
  }
}

// prepare creates the schema, then inserts the finished jobs and the
// backlog.
async function prepare(sys, spec) {
  await wrap("migrate", () => sys.migrate());
  if (spec.finished > 0) {
    await wrap("insert finished jobs", () => sys.insertFinished(spec.finished));
  }
  if (!spec.backlog) {
    return;
  }
  await sys.open(false, null);
  for (let first = 0; first < spec.backlog; first += backlogBatch) {
    const size = Math.min(backlogBatch, spec.backlog - first);
    await wrap("insert backlog", () => sys.enqueueMany(first, size));
  }
}

async function wrap(op, fn) {
  try {
    return await fn();
  } catch (err) {
    err.message = `${op}: ${err.message}`;
    throw err;
  }
}

// measure runs the Spec's measurement and prints its figures, and then the
// peak resident set size of this process and of every worker process the
// system forked: the parent's own reading of a child's memory covers that
// child alone.
async function measure(sys, spec, write) {
  const kinds = { burn_down: burnDown, enqueue, enqueue_many: enqueueMany, latency };
  const run = kinds[spec.kind];
  if (!run) {
    throw new Error(`unknown kind ${JSON.stringify(spec.kind)}`);
  }
  const figs = await run(sys, spec);
  const rssKiB = process.resourceUsage().maxRSS + (sys.workersMaxRSS?.() ?? 0);
  figs.push(["rss_mib", rssKiB / 1024]);
  for (const [metric, value] of figs) {
    write(benchLine(spec.system, spec.driver, spec.scenario, metric, value) + "\n");
  }
}

// benchLine formats one figure as harness.BenchLine does.
export function benchLine(system, driver, scenario, metric, value) {
  return `BENCH system=${system} driver=${driver} scenario=${scenario} metric=${metric} value=${formatValue(value)}`;
}

// formatValue formats a figure as harness.FormatValue does.
export function formatValue(v) {
  if (v >= 100) return v.toFixed(0);
  if (v >= 1) return v.toFixed(2);
  return v.toFixed(4);
}

// deferred returns a promise with its resolve function.
function deferred() {
  let resolve;
  const promise = new Promise((r) => (resolve = r));
  return { promise, resolve };
}

// burnDown works the backlog until it is gone or the window has passed. The
// figure counts the jobs the database holds as finished after Stop, divided
// by the time from Start to the end of Stop; a second figure, worked, is
// that count itself.
async function burnDown(sys, spec) {
  let worked = 0;
  const all = deferred();
  await sys.open(spec.tuned, () => {
    if (++worked === spec.backlog) all.resolve();
  });
  const before = await sys.remaining();
  const timer = setTimeout(all.resolve, durationMs(spec.window));
  const start = performance.now();
  try {
    await wrap("start", () => sys.start());
    await all.promise;
  } finally {
    clearTimeout(timer);
  }
  await stop(sys);
  const elapsed = (performance.now() - start) / 1000;
  const after = await sys.remaining();
  const done = before - after;
  if (done <= 0) {
    throw new Error(`no job finished in ${elapsed.toFixed(3)}s`);
  }
  return [
    ["jobs_per_s", done / elapsed],
    ["worked", done],
  ];
}

async function stop(sys) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`stop: not done after ${stopTimeoutMs / 1000}s`)), stopTimeoutMs);
  });
  try {
    await Promise.race([wrap("stop", () => sys.stop()), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// enqueue enqueues spec.jobs jobs one at a time from spec.goroutines
// concurrent loops, or as many as the window allows. Node runs them on one
// thread, each with its own enqueue in flight, as many at once as the Go
// harness has goroutines.
async function enqueue(sys, spec) {
  await sys.open(false, null);
  let next = 0;
  let done = 0;
  const start = performance.now();
  const deadline = start + durationMs(spec.window);
  const loop = async () => {
    for (let n = ++next; n <= spec.jobs && performance.now() < deadline; n = ++next) {
      await sys.enqueue(n);
      done++;
    }
  };
  const results = await Promise.allSettled(Array.from({ length: spec.goroutines }, loop));
  const elapsed = (performance.now() - start) / 1000;
  const errs = results.filter((r) => r.status === "rejected").map((r) => r.reason);
  if (errs.length === 1) throw errs[0];
  if (errs.length > 1) throw new AggregateError(errs, errs.map((e) => e.message).join("\n"));
  return [["jobs_per_s", done / elapsed]];
}

// enqueueMany enqueues spec.jobs jobs in batches of spec.batch, or as many
// batches as the window allows.
async function enqueueMany(sys, spec) {
  await sys.open(false, null);
  const start = performance.now();
  const deadline = start + durationMs(spec.window);
  let done = 0;
  while (done < spec.jobs && performance.now() < deadline) {
    const size = Math.min(spec.batch, spec.jobs - done);
    await sys.enqueueMany(done, size);
    done += size;
  }
  return [["jobs_per_s", done / ((performance.now() - start) / 1000)]];
}

// latency enqueues spec.jobs jobs into a running client, one every spec.gap
// on a fixed schedule, and reports the median and 99th percentile of the
// time from the start of each enqueue to the start of its job. One job
// enqueued and worked beforehand makes sure the client is running.
async function latency(sys, spec) {
  const n = spec.jobs;
  const enqueued = new Float64Array(n + 1);
  const startedAt = new Float64Array(n + 1); // 0: not started
  let count = 0;
  const all = deferred();
  const first = deferred();
  await sys.open(false, (i) => {
    if (i < 0 || i > n || startedAt[i] !== 0) return;
    startedAt[i] = performance.now();
    if (i === 0) first.resolve();
    if (++count === n + 1) all.resolve();
  });
  await wrap("start", () => sys.start());
  // Job 0 warms the client up and is not a sample.
  await sys.enqueue(0);
  await first.promise;
  const gap = durationMs(spec.gap);
  const begin = performance.now();
  for (let i = 1; i <= n; i++) {
    const wait = begin + (i - 1) * gap - performance.now();
    if (wait > 0) await sleep(wait);
    enqueued[i] = performance.now();
    await sys.enqueue(i);
  }
  let timer;
  const late = new Promise((resolve) => (timer = setTimeout(resolve, latencyWaitMs, "late")));
  const outcome = await Promise.race([all.promise, late]);
  clearTimeout(timer);
  if (outcome === "late") {
    throw new Error(`${n + 1 - count} of ${n} jobs did not start within ${latencyWaitMs / 1000}s`);
  }
  await stop(sys);
  const lat = [];
  for (let i = 1; i <= n; i++) lat.push(startedAt[i] - enqueued[i]);
  return [
    ["p50_ms", percentile(lat, 50)],
    ["p99_ms", percentile(lat, 99)],
  ];
}

// percentile returns the p-th percentile of values (nearest rank), or 0 for
// none, as harness.Percentile does.
export function percentile(values, p) {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  const rank = Math.trunc((s.length * p) / 100 + 0.999999) - 1;
  return s[Math.max(0, Math.min(rank, s.length - 1))];
}
