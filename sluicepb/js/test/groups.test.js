// pb.jobs.workflows and pb.jobs.batches against a real PocketBase app with
// sluice (../internal/testapp): its topic "echo" completes, "flaky" fails
// every attempt; users may enqueue, superusers may also read and manage.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import PocketBase from "pocketbase";

import { withJobs, WorkflowsService, BatchesService } from "../dist/index.js";
import { startApp, rejects } from "./app.js";

let app;
let admin; // a client with the superuser's token
let user; // a client with a user's token

before(async () => {
  app = await startApp();
  admin = client(app.superuserToken);
  user = client(app.userToken);
});

after(async () => {
  if (app) await app.stop();
});

function client(token) {
  const pb = withJobs(new PocketBase(app.url));
  if (token) pb.authStore.save(token, null);
  return pb;
}

// settled polls a workflow or batch until it is settled with status.
async function settled(service, id, status) {
  const deadline = Date.now() + 15000;
  for (;;) {
    const g = await service.get(id);
    if (g.status === status && g.settled_at) return g;
    if (Date.now() > deadline) assert.fail(`${id} is ${g.status} (settled ${g.settled_at}), not settled ${status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("pb.jobs has workflows and batches", () => {
  assert.ok(admin.jobs.workflows instanceof WorkflowsService);
  assert.ok(admin.jobs.batches instanceof BatchesService);
  assert.equal(admin.jobs.workflows.basePath, "/api/jobs/workflows");
  assert.equal(withJobs(new PocketBase(app.url), { basePath: "/x/jobs/" }).jobs.batches.basePath, "/x/jobs/batches");
});

test("a workflow runs its graph, fails at a task that fails for good, and is retried", async () => {
  const wf = await admin.jobs.workflows.create({
    name: "album",
    tasks: [
      { name: "fetch", topic: "echo", payload: { step: "fetch" } },
      { name: "resize-0", topic: "echo", payload: { step: 0 }, after: ["fetch"] },
      { name: "resize-1", topic: "echo", payload: { step: 1 }, options: { priority: 1, tags: ["resize"] }, after: ["fetch"] },
      { name: "album", topic: "flaky", options: { maxRetries: 0 }, after: ["resize-0", "resize-1"] },
      { name: "mail", topic: "echo", options: { onDependencyFailure: "run" }, after: ["album"] },
    ],
    onFailure: [{ topic: "echo", payload: { on: "failure" } }],
    onComplete: [{ topic: "echo", payload: { on: "complete" }, options: { priority: 2 } }],
  });
  assert.equal(wf.kind, "workflow");
  assert.equal(wf.name, "album");
  assert.deepEqual(wf.jobs.map((j) => j.task), ["fetch", "resize-0", "resize-1", "album", "mail"]);
  assert.ok(wf.jobs.every((j) => j.group_id === wf.id));
  assert.equal(wf.jobs[2].priority, 1);
  assert.deepEqual(wf.jobs[2].tags, ["resize"]);
  assert.equal(wf.jobs[3].waiting, true);
  assert.equal(wf.jobs[3].depends_on.length, 2);

  const g = await settled(admin.jobs.workflows, wf.id, "failed");
  assert.equal(g.outcome, "failure");
  assert.deepEqual(g.counts, { completed: 4, failed: 1 });
  assert.equal(g.jobs.length, 5);
  assert.deepEqual(g.callbacks.map((c) => c.on), ["failure", "complete"]);
  assert.ok(g.callbacks.every((c) => c.job && c.job.callback_of === wf.id), JSON.stringify(g.callbacks));
  assert.equal(g.callbacks[1].job.priority, 2);

  const failed = await admin.jobs.workflows.list({ name: "album", statuses: ["failed"], createdFrom: new Date(Date.now() - 3600_000) });
  assert.deepEqual(failed.items.map((w) => w.id), [wf.id]);
  assert.equal(failed.items[0].jobs, undefined);
  const none = await admin.jobs.workflows.list({ statuses: ["completed"], limit: 1 });
  assert.deepEqual(none.items, []);
  const tasks = await admin.jobs.list({ groupIds: [wf.id] });
  assert.ok(tasks.items.every((j) => j.group_id === wf.id), JSON.stringify(tasks.items));
  assert.deepEqual(tasks.items.filter((j) => j.task).map((j) => j.task).sort(), ["album", "fetch", "mail", "resize-0", "resize-1"]);

  const retried = await admin.jobs.workflows.retry(wf.id);
  assert.equal(retried.count, 1);
  assert.equal(retried.items[0].task, "album");
  await settled(admin.jobs.workflows, wf.id, "failed");

  const held = await admin.jobs.workflows.create({
    tasks: [
      { name: "later", topic: "echo", options: { delay: "1h" } },
      { name: "then", topic: "echo", after: ["later"] },
    ],
  });
  const cancelled = await admin.jobs.workflows.cancel(held.id);
  assert.equal(cancelled.count, 2);
  assert.equal((await admin.jobs.workflows.get(held.id)).status, "failed");
});

test("a batch kept open takes jobs until it is closed, then its callbacks run", async () => {
  const b = await admin.jobs.batches.create({
    name: "imports",
    jobs: [{ topic: "echo", payload: { n: 1 } }],
    keepOpen: true,
    onSuccess: [{ topic: "echo", payload: { on: "success" } }],
  });
  assert.equal(b.kind, "batch");
  assert.equal(b.jobs.length, 1);
  const added = await admin.jobs.batches.add(b.id, [{ topic: "echo", payload: { n: 2 } }, { topic: "echo", options: { queue: "default" } }]);
  assert.equal(added.count, 2);
  assert.ok(added.items.every((j) => j.group_id === b.id));
  const open = await admin.jobs.batches.list({ statuses: ["open"] });
  assert.ok(open.items.some((x) => x.id === b.id));

  const closed = await admin.jobs.batches.close(b.id);
  assert.notEqual(closed.status, "open");
  assert.equal(closed.jobs.length, 3);
  const done = await settled(admin.jobs.batches, b.id, "completed");
  assert.equal(done.outcome, "success");
  await rejects(admin.jobs.batches.add(b.id, [{ topic: "echo" }]), 409, "batch_closed");

  // Cancelled, it failed; retried, its jobs are pending again.
  const later = await admin.jobs.batches.create({ jobs: [{ topic: "echo", options: { delay: "1h" } }, { topic: "echo", options: { delay: 3600_000 } }] });
  const cancelled = await admin.jobs.batches.cancel(later.id);
  assert.equal(cancelled.count, 2);
  const failed = await settled(admin.jobs.batches, later.id, "failed");
  assert.deepEqual(failed.counts, { cancelled: 2 });
  const retried = await admin.jobs.batches.retry(later.id);
  assert.deepEqual(retried.items.map((j) => j.status), ["pending", "pending"]);
});

test("the rules, and what cannot be", async () => {
  // Users may enqueue, not read or manage.
  const wf = await user.jobs.workflows.create({ tasks: [{ name: "a", topic: "echo" }] });
  await rejects(user.jobs.workflows.get(wf.id), 403);
  await rejects(user.jobs.workflows.list(), 403);
  await rejects(user.jobs.batches.cancel(wf.id), 403);
  await rejects(client("").jobs.workflows.create({ tasks: [{ name: "a", topic: "echo" }] }), 401);

  await rejects(admin.jobs.workflows.create({ tasks: [{ name: "a", topic: "echo", after: ["b"] }] }), 400, "invalid_workflow");
  await rejects(admin.jobs.workflows.create({ tasks: [] }), 400, "invalid_workflow");
  await rejects(
    admin.jobs.workflows.create({ tasks: [{ name: "a", topic: "echo", options: { onDependencyFailure: "ignore" } }] }),
    400,
  );
  await rejects(admin.jobs.batches.create({ jobs: [] }), 400, "invalid_batch");
  await rejects(admin.jobs.workflows.get("01900000-0000-7000-8000-000000000000"), 404, "not_found");
  await rejects(admin.jobs.batches.get(wf.id), 404, "not_found");
  await rejects(admin.jobs.workflows.retry("nope"), 400);
  await assert.rejects(admin.jobs.workflows.get(""), TypeError);
});
