// Runs every benchmark in turn and prints each one's JSON line.
//   npm run bench            (needs the local Postgres for execution.ts)
import { spawnSync } from "node:child_process";
import path from "node:path";

const here = import.meta.dirname;
const scripts: [string, ...string[]][] = [
  ["partition-math.ts"],
  ["load-definitions.ts"],
  ["dev-cold-start.ts"],
  ["cli-start.ts"],
  ["authoring.ts"],
  ["executor-overhead.ts"],
  ["peers.ts", "--repeat", "3"],
  ["execution.ts", "--reconcilers", "1"],
  ["execution.ts", "--reconcilers", "2"],
  ["step-cpu.ts"],
  ["claim-scale.ts"],
  ["code-version-changed.ts"],
  ["backfill.ts"],
  ["automation-tick.ts"],
  ["automation-loop.ts"],
  ["deferred.ts"],
  ["api.ts"],
  ["pg-arrays.ts"],
  ["wipe.ts"],
];
let failed = false;
for (const [script, ...args] of scripts) {
  const r = spawnSync(process.execPath, ["--import", "tsx", path.join(here, script), ...args], { stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) {
    failed = true;
    process.stderr.write(`bench/${script} ${args.join(" ")} failed with exit code ${r.status}\n`);
  }
}
process.exitCode = failed ? 1 : 0;
