// Start-up of one-off CLI commands: `tributary --version` (the command line alone), `tributary runs --json`
// answered by a running `tributary api` (what an operational command costs when a server holds the data), and the
// same command working in-process on the demo definitions: on Postgres, and on the embedded database of a data
// directory copied from the package's template (what a command costs beside no server).
// Median of --samples runs each (default 5), with the load average; needs a Postgres server (DATABASE_URL, default
// the local one), on which it creates and drops a scratch database. Each figure is the wall time and, on Linux, the CPU
// of the command's process tree (user + system time of the waited-for children in /proc/self/stat), medians. Also
// `tributary check` on the demo's definitions files and on one of them (each file is imported in a process of its own).
// Prints one JSON object.
//   npx tsx bench/cli-start.ts [--samples 5]
import { spawn } from "node:child_process";
import { copyFile, mkdir } from "node:fs/promises";
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { checkPgliteTemplate, PACKAGE_PGLITE_TEMPLATE, seedFromTemplate } from "../src/storage/index.js";
import { ascending, floorRank, printResult, REPO_ROOT, startTributary, stopProcess, TRIBUTARY_BIN, withScope } from "./_setup.js";

const { values } = parseArgs({ options: { samples: { type: "string", default: "5" } } });
const samples = Number(values.samples);

/** User + system CPU of this process's waited-for children so far, in ms; undefined where /proc is not there. */
function childrenCpuMs(): number | undefined {
  try {
    // The fields after the command name (which may hold spaces) start at the third: cutime and cstime are the 16th
    // and 17th.
    const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
    return ((Number(fields[16 - 3]) + Number(fields[17 - 3])) * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}
/** Linux's USER_HZ: /proc times are in hundredths of a second. */
const CLOCK_TICKS = 100;

function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ ms: number; cpuMs: number | undefined }> {
  const started = performance.now();
  const cpuBefore = childrenCpuMs();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TRIBUTARY_BIN, ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.once("exit", (code) => {
      if (code !== 0) return reject(new Error(`tributary ${args.join(" ")} exited ${code}: ${stderr}`));
      const cpuAfter = childrenCpuMs();
      resolve({
        ms: performance.now() - started,
        cpuMs: cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore,
      });
    });
  });
}

async function median(args: string[], env: NodeJS.ProcessEnv): Promise<{ ms: number; cpuMs: number | null }> {
  const times: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < samples; i++) {
    const { ms, cpuMs } = await run(args, env);
    times.push(ms);
    if (cpuMs !== undefined) cpu.push(cpuMs);
  }
  return {
    ms: Math.round(floorRank(ascending(times), 0.5)!),
    cpuMs: cpu.length === samples ? Math.round(floorRank(ascending(cpu), 0.5)!) : null,
  };
}

const SERVING = /serving the API at (http:\/\/\S+)/;

await withScope(async (scope) => {
  const env = { DATABASE_URL: await scope.scratchDatabase("cli"), NO_COLOR: "1" };
  const api = await startTributary(["api", "--port", "0", "--insecure-no-auth"], { env, ready: (output) => SERVING.test(output) });
  scope.onClose(() => stopProcess(api.child));
  const serverUrl = SERVING.exec(api.output())![1]!;
  const loadBefore = loadavg()[0]!;
  const versionMs = await median(["--version"], env);
  const runsViaServerMs = await median(["runs", "--json", "--url", serverUrl], env);
  // No server listens on port 9: the command opens the database itself.
  const inProcess = ["runs", "--json", "--url", "http://127.0.0.1:9"];
  const runsOnPostgresMs = await median([...inProcess, "--data-dir", await scope.tempDir("cli-pg")], env);
  const template = await checkPgliteTemplate(PACKAGE_PGLITE_TEMPLATE);
  if (!template.usable) throw new Error(`the package's database template is not usable (npm run build:db-template): ${template.reason}`);
  const dataDir = await scope.tempDir("cli-embedded");
  await seedFromTemplate(path.join(dataDir, "db"), template, new Set());
  const runsEmbeddedMs = await median([...inProcess, "--data-dir", dataDir], { ...env, DATABASE_URL: "" });
  const demo = path.join(REPO_ROOT, "asset-definitions");
  const checkDemoMs = await median(["check", "--json", "--definitions", demo], env);
  const oneFile = await scope.tempDir("cli-one-file");
  await mkdir(path.join(oneFile, "shop"));
  for (const file of ["orders.ts", "_synthetic.ts"]) await copyFile(path.join(demo, "shop", file), path.join(oneFile, "shop", file));
  const checkOneFileMs = await median(["check", "--json", "--definitions", oneFile], env);
  printResult({
    bench: "cli-start",
    samples,
    versionMs,
    runsViaServerMs,
    runsOnPostgresMs,
    runsEmbeddedMs,
    checkDemoMs,
    checkOneFileMs,
    loadAverage: [loadBefore, loadavg()[0]].map((l) => Math.round(l! * 10) / 10),
  });
});
