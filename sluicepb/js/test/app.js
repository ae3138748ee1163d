// Starts the test app of sluicepb (a real PocketBase app with sluice, on
// an ephemeral port, in a temporary folder) and reads its URL and tokens.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { ClientResponseError } from "pocketbase";

const moduleDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * startApp runs `go run ./internal/testapp` in the sluicepb module and
 * resolves to {url, superuserToken, userToken, stop}.
 */
export async function startApp() {
  const env = { ...process.env };
  if (!env.GOTOOLCHAIN || env.GOTOOLCHAIN === "local") env.GOTOOLCHAIN = "go1.27.4";
  const proc = spawn("go", ["run", "./internal/testapp"], {
    cwd: moduleDir,
    env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  proc.stderr.on("data", (d) => {
    stderr += d;
    if (stderr.length > 20000) stderr = stderr.slice(-20000);
  });
  const exited = new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal })));
  const lines = createInterface({ input: proc.stdout });
  const first = await Promise.race([
    new Promise((resolve) => lines.once("line", resolve)),
    exited.then(({ code, signal }) => {
      throw new Error(`the test app exited (${code ?? signal}) before serving:\n${stderr}`);
    }),
  ]);
  const info = JSON.parse(first);
  return {
    ...info,
    // stop closes the app's standard input, which makes it terminate
    // gracefully, and waits for it to exit.
    async stop() {
      proc.stdin.end();
      const timer = setTimeout(() => proc.kill("SIGKILL"), 15000);
      const res = await exited;
      clearTimeout(timer);
      return res;
    },
  };
}

/**
 * rejects asserts that promise rejects with the SDK's ClientResponseError
 * of status and, if given, the problem's code.
 */
export async function rejects(promise, status, code) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof ClientResponseError, `not a ClientResponseError: ${err}`);
    assert.equal(err.status, status, JSON.stringify(err.response));
    if (code) assert.equal(err.response.code, code, JSON.stringify(err.response));
    return true;
  });
}
