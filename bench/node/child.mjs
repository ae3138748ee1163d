// The child program of the comparison (bench/cmd/compare) for the systems
// that run on Node: graphile-worker and pg-boss, each on Postgres. It runs
// one phase of one measurement, like the Go programs under
// bench/cmd/children:
//
//	<node> bench/node/child.mjs -phase prepare|measure -spec '<Spec JSON>'
//
// printing BENCH lines to standard output, or an error to standard error
// with exit status 1. Each system's module is loaded only when its spec
// names it, so one system's packages never count in the other's memory.

import { childMain } from "./harness.mjs";

const systems = {
  "graphile-worker/pg": () => import("./graphile-worker.mjs"),
  "pg-boss/pg": () => import("./pg-boss.mjs"),
};

try {
  await childMain(process.argv.slice(2), systems, (s) => process.stdout.write(s));
  // A library may leave a timer or a socket behind after close; the
  // measurement is over, so nothing it would still do matters.
  process.exit(0);
} catch (err) {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
}
