// Start-up of one-off CLI commands: `tributary --version` (the command line alone) and `tributary runs --json`
// answered by a running `tributary api` (what an operational command costs when a server holds the data).
// Median of --samples runs each, with the load average; needs a Postgres server (DATABASE_URL, default the
// local one), on which it creates and drops a scratch database. Prints one JSON object.
import { spawn } from "node:child_process";
import { loadavg } from "node:os";
import path from "node:path";
import pg from "pg";

const root = path.resolve(import.meta.dirname, "..");
const bin = path.join(root, "bin/tributary.mjs");
const samples = Number(process.argv[process.argv.indexOf("--samples") + 1] || 5);
const adminUrl = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const dbName = `tributary_bench_cli_${process.pid}`;

function run(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.once("exit", (code) => (code === 0 ? resolve(performance.now() - started) : reject(new Error(`tributary ${args.join(" ")} exited ${code}: ${stderr}`))));
  });
}

async function median(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < samples; i++) times.push(await run(args, env));
  times.sort((a, b) => a - b);
  return Math.round(times[Math.floor(times.length / 2)]!);
}

const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`CREATE DATABASE ${dbName}`);
const url = new URL(adminUrl);
url.pathname = `/${dbName}`;
const env = { DATABASE_URL: url.href, NO_COLOR: "1" };
const api = spawn(process.execPath, [bin, "api", "--port", "0"], { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
try {
  const serverUrl = await new Promise<string>((resolve, reject) => {
    let out = "";
    api.stderr.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /serving the API at (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    api.once("exit", (code) => reject(new Error(`tributary api exited ${code}: ${out}`)));
  });
  const loadBefore = loadavg()[0]!;
  const versionMs = await median(["--version"], env);
  const runsViaServerMs = await median(["runs", "--json", "--url", serverUrl], env);
  console.log(
    JSON.stringify({ bench: "cli-start", samples, versionMs, runsViaServerMs, loadAverage: [loadBefore, loadavg()[0]].map((l) => Math.round(l! * 10) / 10) }),
  );
} finally {
  api.kill("SIGTERM");
  await new Promise((r) => (api.exitCode === null ? api.once("exit", r) : r(undefined)));
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}
