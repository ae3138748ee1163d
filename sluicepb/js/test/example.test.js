// The example app (../../examples/app) end to end, through the SDK: an
// order's charge runs in Go, then its receipt in the JavaScript worker of
// the example's pb_hooks.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import PocketBase from "pocketbase";

import { withJobs } from "../dist/index.js";

const moduleDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const exampleDir = path.join(moduleDir, "examples", "app");

let dir;
let proc;
let exited;
let url;
let output = "";

function goEnv() {
  const env = { ...process.env };
  if (!env.GOTOOLCHAIN || env.GOTOOLCHAIN === "local") env.GOTOOLCHAIN = "go1.27.4";
  return env;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "sluicepb-example-"));
  const bin = path.join(dir, "app");
  execFileSync("go", ["build", "-o", bin, "./examples/app"], { cwd: moduleDir, env: goEnv(), stdio: "inherit" });
  // The app looks for pb_hooks next to its data directory.
  cpSync(path.join(exampleDir, "pb_hooks"), path.join(dir, "pb_hooks"), { recursive: true });
  const data = path.join(dir, "pb_data");
  execFileSync(bin, ["superuser", "upsert", "root@example.com", "1234567890", "--dir", data], { stdio: "ignore" });

  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  proc = spawn(bin, ["serve", "--dir", data, "--http", `127.0.0.1:${port}`], { stdio: ["ignore", "pipe", "pipe"] });
  proc.stdout.on("data", (d) => (output = (output + d).slice(-20000)));
  proc.stderr.on("data", (d) => (output = (output + d).slice(-20000)));
  exited = new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal })));
  const deadline = Date.now() + 30000;
  for (;;) {
    try {
      const res = await fetch(url + "/api/health");
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error("the example did not answer its health check:\n" + output);
    await new Promise((r) => setTimeout(r, 100));
  }
});

after(async () => {
  if (proc && proc.exitCode === null) {
    proc.kill("SIGTERM");
    const { code } = await exited;
    assert.equal(code, 0, "the example stops cleanly on SIGTERM:\n" + output);
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("an order is charged in Go, then its receipt written by the JavaScript worker", async () => {
  const pb = withJobs(new PocketBase(url));
  await pb.collection("_superusers").authWithPassword("root@example.com", "1234567890");

  const order = await pb.collection("orders").create({ amount: 42 });
  const deadline = Date.now() + 20000;
  let got;
  for (;;) {
    got = await pb.collection("orders").getOne(order.id, { requestKey: null });
    if (got.receipt) break;
    if (Date.now() > deadline) assert.fail("no receipt: " + JSON.stringify(got) + "\n" + output);
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(got.status, "charged");
  assert.equal(got.receipt, `Charged 42 for order ${order.id}`);

  const receipts = await pb.jobs.list({ topics: ["receipt"], statuses: ["completed"] });
  const mine = receipts.items.find((j) => j.payload.order === order.id);
  assert.ok(mine, JSON.stringify(receipts.items));
  assert.deepEqual(mine.result, { receipt: got.receipt });
  assert.equal(mine.unique_key, `receipt-${order.id}`);
});

test("an order updated to charged by hand gets its receipt too", async () => {
  const pb = withJobs(new PocketBase(url));
  await pb.collection("_superusers").authWithPassword("root@example.com", "1234567890");

  // A negative amount: the charge worker cancels its job and leaves the order.
  const order = await pb.collection("orders").create({ amount: -5 });
  const deadline = Date.now() + 20000;
  for (;;) {
    const charges = await pb.jobs.list({ topics: ["charge"], statuses: ["cancelled"] });
    if (charges.items.some((j) => j.payload.order === order.id)) break;
    if (Date.now() > deadline) assert.fail("the charge was not cancelled\n" + output);
    await new Promise((r) => setTimeout(r, 100));
  }
  await pb.collection("orders").update(order.id, { status: "charged" });
  for (;;) {
    const got = await pb.collection("orders").getOne(order.id, { requestKey: null });
    if (got.receipt) {
      assert.equal(got.receipt, `Charged -5 for order ${order.id}`);
      break;
    }
    if (Date.now() > deadline) assert.fail("no receipt: " + JSON.stringify(got) + "\n" + output);
    await new Promise((r) => setTimeout(r, 100));
  }
});
