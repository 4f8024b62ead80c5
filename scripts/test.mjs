#!/usr/bin/env node
// `npm test`: builds the UI, the precompiled CLI and the embedded database's template (the suites use all three),
// then runs the type check, the format check and the linter beside vitest, at a lower CPU priority so that the
// suites' timing sees as little of them as possible. Their output is streamed with a prefix per check; vitest's
// passes through as it is. Arguments go to vitest (`npm test -- test/cli`). Exits non-zero if anything failed, and
// says what.
import { spawn } from "node:child_process";
import { setPriority } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const NPM = process.platform === "win32" ? "npm.cmd" : "npm";
/** Below the suites' priority (0); the checks take the CPU the suites leave. */
const CHECK_PRIORITY = 10;

/** @type {Set<import("node:child_process").ChildProcess>} */
const running = new Set();
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    for (const child of running) child.kill(signal);
    process.exit(128 + ({ SIGINT: 2, SIGTERM: 15, SIGHUP: 1 }[signal] ?? 1));
  });
}

/**
 * Runs a command in the package directory. With a prefix, its output goes line by line to ours behind
 * `[prefix] `; without one, it shares our terminal. Resolves with how it ended.
 *
 * @param {string} name
 * @param {string[]} command
 * @param {{ prefix?: boolean, priority?: number }} options
 * @returns {Promise<{ name: string, ok: boolean, ms: number, how: string }>}
 */
function run(name, command, options = {}) {
  const started = performance.now();
  const child = spawn(command[0], command.slice(1), {
    cwd: ROOT,
    stdio: options.prefix ? ["ignore", "pipe", "pipe"] : "inherit",
  });
  running.add(child);
  if (options.priority !== undefined && child.pid !== undefined) {
    try {
      setPriority(child.pid, options.priority);
    } catch {
      // Only slower for the suites.
    }
  }
  if (options.prefix) {
    prefixLines(child.stdout, process.stdout, name);
    prefixLines(child.stderr, process.stderr, name);
  }
  return new Promise((resolve) => {
    const done = (ok, how) => {
      running.delete(child);
      resolve({ name, ok, ms: performance.now() - started, how });
    };
    child.once("error", (err) => done(false, err.message));
    child.once("close", (code, signal) => done(code === 0, signal ? `killed by ${signal}` : `exit code ${code}`));
  });
}

/** Copies `from` to `to` a whole line at a time, each behind `[name] `. */
function prefixLines(from, to, name) {
  let partial = "";
  from.setEncoding("utf8");
  from.on("data", (chunk) => {
    const lines = (partial + chunk).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) to.write(`[${name}] ${line}\n`);
  });
  from.on("end", () => {
    if (partial) to.write(`[${name}] ${partial}\n`);
  });
}

function seconds(ms) {
  return `${(ms / 1000).toFixed(1)} s`;
}

function report(results) {
  const failed = results.filter((r) => !r.ok);
  process.stderr.write("\n");
  for (const r of results) process.stderr.write(`${r.ok ? "passed" : "FAILED"}  ${r.name} (${seconds(r.ms)}${r.ok ? "" : `, ${r.how}`})\n`);
  if (failed.length > 0) {
    process.stderr.write(`\nnpm test failed: ${failed.map((r) => r.name).join(", ")}\n`);
    process.exit(1);
  }
}

const builds = await Promise.all([
  run("build:ui", [NPM, "run", "--silent", "build:ui"], { prefix: true }),
  run("build:cli", [NPM, "run", "--silent", "build:cli"], { prefix: true }),
  run("build:db-template", [NPM, "run", "--silent", "build:db-template"], { prefix: true }),
]);
// The suites need them; without them their failures would only hide the build's.
if (builds.some((r) => !r.ok)) report(builds);

const results = await Promise.all([
  run("vitest", [path.join(ROOT, "node_modules", ".bin", "vitest"), "run", ...process.argv.slice(2)]),
  run("typecheck", [NPM, "run", "--silent", "typecheck"], { prefix: true, priority: CHECK_PRIORITY }),
  run("format:check", [NPM, "run", "--silent", "format:check"], { prefix: true, priority: CHECK_PRIORITY }),
  run("lint", [NPM, "run", "--silent", "lint"], { prefix: true, priority: CHECK_PRIORITY }),
]);
report([...builds, ...results]);
