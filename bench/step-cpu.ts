// CPU time per step of the execution workloads W1–W3 (bench/_workloads.ts), by process: the Postgres server (its
// postmaster and every child, exited ones included), the reconciler (this process) and the local executor's worker
// processes. On a machine whose cores are all busy, CPU per step moves far less from run to run than wall time does,
// so it shows a change of a few per cent that steps/s hides in the noise. Each workload runs once to warm up, then
// --runs times. Needs Linux (/proc) and the Postgres server of DATABASE_URL on this machine. Prints one JSON line
// per workload: microseconds of CPU per step, and of wall time.
//
//   npx tsx bench/step-cpu.ts [--runs 4] [--only w1,w2,w3]
import { readdirSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { sql } from "kysely";
import { withScope } from "./_setup.js";
import { startTributaryBench } from "./_tributary.js";
import { WORKLOADS, type Workload } from "./_workloads.js";

const { values: args } = parseArgs({
  options: { runs: { type: "string", default: "4" }, only: { type: "string", default: WORKLOADS.join(",") } },
});
const runs = Number(args.runs);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a positive integer, got ${JSON.stringify(args.runs)}`);
const only = args.only.split(",") as Workload[];
for (const w of only)
  if (!WORKLOADS.includes(w)) throw new Error(`--only: unknown workload ${JSON.stringify(w)} (known: ${WORKLOADS.join(", ")})`);

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ, 100 on Linux). */
const TICKS_PER_SEC = 100;

interface ProcTimes {
  readonly parent: number;
  /** Its own user and system time, in ticks. */
  readonly own: number;
  /** User and system time of its children that exited and were waited for, in ticks. */
  readonly reaped: number;
}

function procTimes(pid: number): ProcTimes | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined; // exited meanwhile
  }
  // Fields after the command name (which may hold spaces): state ppid … utime stime cutime cstime (fields 4, 14–17).
  const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { parent: Number(f[1]), own: Number(f[11]) + Number(f[12]), reaped: Number(f[13]) + Number(f[14]) };
}

/** CPU milliseconds of a process and of its children, live and exited. */
function treeCpuMs(root: number): number {
  let ticks = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const t = procTimes(pid);
    if (t && (pid === root || t.parent === root)) ticks += t.own + t.reaped;
  }
  return (ticks * 1000) / TICKS_PER_SEC;
}

const ownCpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function main(): Promise<void> {
  await withScope(async (scope) => {
    const bench = await startTributaryBench(scope, 1);
    const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(bench.db);
    const postmaster = procTimes(rows[0]!.pid)?.parent;
    if (postmaster === undefined || !procTimes(postmaster)) {
      throw new Error("bench/step-cpu.ts needs the Postgres server of DATABASE_URL on this machine (its processes under /proc)");
    }
    for (const w of only) {
      await bench[w]();
      const before = { pg: treeCpuMs(postmaster), reconciler: ownCpuMs(), all: treeCpuMs(process.pid) };
      const started = performance.now();
      let steps = 0;
      for (let i = 0; i < runs; i++) steps += (await bench[w]()).steps;
      const wall = performance.now() - started;
      const reconciler = ownCpuMs() - before.reconciler;
      const workers = treeCpuMs(process.pid) - before.all - reconciler;
      const pg = treeCpuMs(postmaster) - before.pg;
      const perStep = (ms: number) => Math.round((ms * 1000) / steps);
      console.log(
        JSON.stringify({
          bench: "step-cpu",
          workload: w,
          runs,
          steps,
          cpuUsPerStep: {
            postgres: perStep(pg),
            reconciler: perStep(reconciler),
            workers: perStep(workers),
            total: perStep(pg + reconciler + workers),
          },
          wallUsPerStep: perStep(wall),
        }),
      );
    }
  });
}

await main();
