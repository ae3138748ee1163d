// pb.jobs against a real PocketBase app with sluice, with real superuser
// and user tokens. The app (../internal/testapp) works the topic "echo"
// (completes) and "flaky" (fails every attempt); users may enqueue,
// superusers may also read and manage.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import PocketBase from "pocketbase";

import { withJobs, JobsService, StreamError } from "../dist/index.js";
import { rejects } from "./app.js";

let app;
let admin; // a client with the superuser's token
let user; // a client with a user's token
let anon; // a client without a token

before(async () => {
  app = await startAppOnce();
  admin = client(app.superuserToken);
  user = client(app.userToken);
  anon = client("");
});

after(async () => {
  if (app) await app.stop();
});

async function startAppOnce() {
  const { startApp } = await import("./app.js");
  return startApp();
}

function client(token) {
  const pb = withJobs(new PocketBase(app.url));
  if (token) pb.authStore.save(token, null);
  return pb;
}

// waitFor polls the job until it has one of the statuses.
async function waitFor(pb, id, ...statuses) {
  const deadline = Date.now() + 15000;
  for (;;) {
    const job = await pb.jobs.get(id);
    if (statuses.includes(job.status)) return job;
    if (Date.now() > deadline) assert.fail(`job ${id} is ${job.status}, not ${statuses.join(" or ")}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("withJobs adds pb.jobs", () => {
  assert.ok(admin.jobs instanceof JobsService);
  assert.equal(admin.jobs.basePath, "/api/jobs");
  assert.equal(withJobs(new PocketBase(app.url), { basePath: "/x/jobs/" }).jobs.basePath, "/x/jobs");
});

test("a superuser enqueues a job that a worker completes, and reads it back", async () => {
  const { job, duplicate } = await admin.jobs.enqueue("echo", { to: "ada@example.com" });
  assert.equal(duplicate, false);
  assert.equal(job.topic, "echo");
  assert.deepEqual(job.payload, { to: "ada@example.com" });
  assert.equal(job.queue, "default");
  assert.equal(job.max_retries, 3);

  const done = await waitFor(admin, job.id, "completed");
  assert.equal(done.attempt, 1);
  assert.ok(Array.isArray(done.history) && done.history.length === 1, JSON.stringify(done.history));

  const page = await admin.jobs.list({ topics: ["echo"], statuses: ["completed"], order: "newest", limit: 1 });
  assert.equal(page.items.length, 1);
  assert.equal(page.items[0].id, job.id);
  assert.ok(page.total >= 1);

  const stats = await admin.jobs.stats({ topics: ["echo"], window: "1h" });
  assert.ok(stats.by_status.completed >= 1, JSON.stringify(stats.by_status));
  assert.equal(stats.window_seconds, 3600);
});

test("enqueue's options reach the job", async () => {
  const runAt = new Date(Date.now() + 3600_000);
  const { job } = await admin.jobs.enqueue("echo", [1, 2], {
    runAt,
    maxRetries: 0,
    queue: "default",
    priority: 5,
    uniqueKey: "opts-" + runAt.getTime(),
    tags: ["a", "b"],
    metadata: { tenant: "acme" },
  });
  assert.equal(Date.parse(job.run_at), runAt.getTime());
  assert.equal(job.max_retries, 0);
  assert.equal(job.priority, 5);
  assert.equal(job.status, "pending");
  assert.deepEqual(job.payload, [1, 2]);
  assert.deepEqual(job.tags, ["a", "b"]);
  assert.deepEqual(job.metadata, { tenant: "acme" });

  const again = await admin.jobs.enqueue("echo", [3], { uniqueKey: job.unique_key });
  assert.equal(again.duplicate, true);
  assert.equal(again.job.id, job.id);

  const delayed = await admin.jobs.enqueue("echo", {}, { delay: 60_000 });
  const due = Date.parse(delayed.job.run_at) - Date.parse(delayed.job.created_at);
  assert.ok(due > 55_000 && due < 65_000, `due in ${due} ms`);

  const found = await admin.jobs.list({ tags: ["a"], metadata: { tenant: "acme" } });
  assert.deepEqual(found.items.map((j) => j.id), [job.id]);
});

test("a key and a sequence reach the job, and list selects by key", async () => {
  const key = "acct-" + Date.now();
  const { job } = await admin.jobs.enqueue("echo", { n: 1 }, { delay: "1h", key, sequence: "hold" });
  assert.equal(job.key, key);
  assert.equal(job.sequence, "hold");
  const other = await admin.jobs.enqueue("echo", { n: 2 }, { delay: "1h", key: key + "-b" });
  assert.equal(other.job.sequence, undefined);

  const page = await admin.jobs.list({ keys: [key, key + "-b"], order: "oldest" });
  assert.deepEqual(page.items.map((j) => j.id), [job.id, other.job.id]);
  assert.equal((await admin.jobs.list({ keys: [key] })).total, 1);

  await rejects(admin.jobs.enqueue("echo", {}, { sequence: "hold" }), 400, "invalid_request");
  await rejects(admin.jobs.enqueue("echo", {}, { key: "k", sequence: "later" }), 400, "invalid_request");
  assert.equal((await admin.jobs.list({ keys: ["k"] })).total, 0, "refused enqueues wrote nothing");
});

test("cancel, requeue, retry and delete act on one job", async () => {
  const { job } = await admin.jobs.enqueue("echo", { n: 1 }, { delay: "1h" });
  const cancelled = await admin.jobs.cancel(job.id);
  assert.equal(cancelled.status, "cancelled");
  await rejects(admin.jobs.cancel(job.id), 409, "status_conflict");

  const requeued = await admin.jobs.requeue(job.id);
  assert.equal(requeued.status, "pending");
  await waitFor(admin, job.id, "completed"); // a requeued job is due now

  const deleted = await admin.jobs.delete(job.id);
  assert.equal(deleted.id, job.id);
  await rejects(admin.jobs.get(job.id), 404, "not_found");

  const later = await admin.jobs.enqueue("echo", {}, { delay: "1h" });
  const retried = await admin.jobs.retry(later.job.id);
  assert.ok(Date.parse(retried.run_at) <= Date.now() + 1000);
  await waitFor(admin, later.job.id, "completed");
});

test("a failing job records its errors and can be requeued once failed", async () => {
  const { job } = await admin.jobs.enqueue("flaky", { why: "always" }, { maxRetries: 0 });
  const failed = await waitFor(admin, job.id, "failed");
  assert.equal(failed.errors.length, 1);
  assert.equal(failed.errors[0].error, "flaky fails");
  const again = await admin.jobs.requeue(job.id);
  assert.equal(again.status, "pending");
});

test("bad input is refused with the API's problem and writes nothing", async () => {
  const before = (await admin.jobs.list({ topics: ["echo"] })).total;
  await rejects(admin.jobs.enqueue("echo", {}, { queue: "nope" }), 400, "unknown_queue");
  await rejects(admin.jobs.enqueue("echo", {}, { runAt: new Date(), delay: "1s" }), 400, "invalid_request");
  await rejects(admin.jobs.enqueue("no_such_topic", {}), 400, "unknown_topic");
  await rejects(admin.jobs.list({ limit: -1 }), 400, "invalid_filter");
  assert.equal((await admin.jobs.list({ topics: ["echo"] })).total, before);
  await assert.rejects(admin.jobs.get(""), TypeError);
});

test("the rules apply to a user's and an anonymous token", async () => {
  const { job } = await user.jobs.enqueue("echo", { by: "user" });
  assert.equal(job.topic, "echo");
  await rejects(user.jobs.get(job.id), 403);
  await rejects(user.jobs.list(), 403);
  await rejects(user.jobs.cancel(job.id), 403);
  await rejects(anon.jobs.enqueue("echo", {}), 401);
  await waitFor(admin, job.id, "completed");
});

test("enqueues at once are all made: no request cancels another", async () => {
  const results = await Promise.all(Array.from({ length: 10 }, (_, i) => admin.jobs.enqueue("echo", { i })));
  assert.equal(new Set(results.map((r) => r.job.id)).size, 10);
});

test("subscribe streams a job's changes until unsubscribed", async () => {
  const seen = [];
  const logs = [];
  let wake;
  const unsubscribe = await admin.jobs.subscribe(
    (change) => {
      seen.push(change);
      wake?.();
    },
    { topics: ["echo"], onLog: (e) => logs.push(e) },
  );
  const { job } = await admin.jobs.enqueue("echo", { live: true });
  const deadline = Date.now() + 15000;
  while (!seen.some((c) => c.job.id === job.id && c.kind === "completed")) {
    if (Date.now() > deadline) assert.fail("no completed change: " + JSON.stringify(seen));
    await new Promise((r) => {
      wake = r;
      setTimeout(r, 200);
    });
  }
  const kinds = seen.filter((c) => c.job.id === job.id).map((c) => c.kind);
  assert.equal(kinds[0], "enqueued", kinds.join(","));
  assert.equal(kinds.at(-1), "completed");
  const mine = seen.find((c) => c.job.id === job.id);
  assert.equal(mine.job.topic, "echo");
  assert.ok(mine.id, "a change carries the stream's event id");
  const log = logs.find((e) => e.job_id === job.id);
  assert.ok(log, "the worker's record, live: " + JSON.stringify(logs));
  assert.equal(log.record.message, "echoing");
  assert.equal(log.record.level, "INFO");
  assert.deepEqual(log.record.attrs, { bytes: 13 });
  await unsubscribe();

  // Only echo's changes were asked for.
  assert.ok(seen.every((c) => c.job.topic === "echo"));
  const n = seen.length;
  await admin.jobs.enqueue("echo", { after: true });
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(seen.length, n, "no change after unsubscribing");
});

test("subscribe is refused without the right to manage", async () => {
  await assert.rejects(
    user.jobs.subscribe(() => {}),
    (err) => err instanceof StreamError && err.status === 403,
  );
  await assert.rejects(
    anon.jobs.subscribe(() => {}),
    (err) => err instanceof StreamError && err.status === 401,
  );
});
