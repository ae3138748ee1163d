// One worker process of graphile-worker's throughput settings, forked by
// graphile-worker.mjs in the measuring process. It answers that process's
// messages:
//
//	init  {db, schema}  -> ready
//	start               -> started, once run() has started the runner
//	stop                -> stopped {maxRSS}, once the runner has stopped
//
// and reports the numbers of the jobs it starts as {type: "jobs", ns},
// batched: one message for all the jobs that start in one turn of the
// event loop, not one per job.

import { run } from "graphile-worker";
import { logger, task, tunedPreset } from "./graphile-worker.mjs";


let config = null;
let runner = null;
let pending = [];

function flush() {
  if (pending.length > 0) {
    process.send({ type: "jobs", ns: pending });
    pending = [];
  }
}

function started(n) {
  if (pending.length === 0) setImmediate(flush);
  pending.push(n);
}

function fail(err) {
  process.send({ type: "error", message: String(err?.stack ?? err) }, () => process.exit(1));
}

async function handle(m) {
  switch (m.type) {
    case "init":
      config = { connectionString: m.db, schema: m.schema };
      process.send({ type: "ready" });
      break;
    case "start":
      runner = await run({
        preset: { worker: { ...tunedPreset.worker, ...config } },
        logger,
        noHandleSignals: true,
        taskList: { [task]: (payload) => started(payload.n) },
      });
      runner.promise.catch(fail);
      process.send({ type: "started" });
      break;
    case "stop":
      await runner.stop();
      await runner.promise;
      flush();
      process.send({ type: "stopped", maxRSS: process.resourceUsage().maxRSS }, () => process.exit(0));
      break;
    default:
      throw new Error(`unknown message ${JSON.stringify(m)}`);
  }
}

process.on("message", (m) => handle(m).catch(fail));
// The measuring process went away: nothing is left to report to.
process.on("disconnect", () => process.exit(1));
