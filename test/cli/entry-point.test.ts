import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { eventually, ROOT, runCli } from "./run-cli.js";

// The `tributary` executable as scripts and service managers use it: its output into pipes, its errors as JSON,
// and its lifetime tied to the process that started it.
const BIN = path.join(ROOT, "bin/tributary.mjs");

let defsDir: string;

beforeAll(async () => {
  defsDir = await mkdtemp(path.join(tmpdir(), "tributary-entry-defs-"));
  await writeFile(
    path.join(defsDir, "days.ts"),
    `import { asset, daily } from "tributary";\nexport const days = asset({ key: "entry/days", partitions: daily({ start: "2015-01-01" }) }, async () => 1);\n`,
  );
});

afterAll(async () => {
  await rm(defsDir, { recursive: true, force: true });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describePostgres("the tributary executable", () => {
  const database = useTestDatabase();
  const globals = () => ["--definitions", defsDir, "--url", "http://127.0.0.1:9"];
  const env = () => ({ NO_COLOR: "1", DATABASE_URL: database.url });

  it("ends quietly when the reader of its output goes away early (| head)", async () => {
    // Thousands of lines: far more than a pipe holds, so the command is still writing when the reader leaves.
    const child = spawn(
      process.execPath,
      [BIN, "partitions", "entry/days", "--from", "2015-01-01", "--to", "2025-01-01", "--json", ...globals()],
      {
        cwd: ROOT,
        env: { ...process.env, ...env() },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const firstLine = await new Promise<string>((resolve, reject) => {
      let out = "";
      const onData = (d: Buffer) => {
        out += d.toString();
        if (!out.includes("\n")) return;
        child.stdout.off("data", onData);
        child.stdout.destroy(); // as `head -1` does
        resolve(out.slice(0, out.indexOf("\n")));
      };
      child.stdout.on("data", onData);
      child.once("exit", (code) => reject(new Error(`exited (${code}) before printing a line: ${stderr}`)));
    });
    expect(firstLine).toBe("{");
    const code = await new Promise<number | null>((resolve) => {
      if (child.exitCode !== null) resolve(child.exitCode);
      else child.once("exit", (c) => resolve(c));
    });
    expect(stderr).not.toMatch(/EPIPE|Error/);
    expect(code).toBe(0);
  }, 300_000);

  it("leaves stack traces out of --json errors unless --verbose", async () => {
    const plain = await runCli(["partitions", "entry/nope", "--json", ...globals()], { env: env() });
    expect(plain.code).toBe(1);
    const body = JSON.parse(plain.stdout) as { ok: boolean; error: { code: string; message: string } };
    expect(body.ok).toBe(false);
    expect(body.error.message).toContain("entry/nope");
    expect(plain.stdout).not.toContain('"stack"');

    const verbose = await runCli(["partitions", "entry/nope", "--json", "--verbose", ...globals()], { env: env() });
    expect(verbose.code).toBe(1);
    const stack = (JSON.parse(verbose.stdout) as { error: { stack?: string } }).error.stack;
    expect(stack).toMatch(/\n\s+at /);
    // Precompiled or not, its frames name the sources (their lines and columns), not the compiled chunks.
    expect(stack).toMatch(/src\/cli\/[\w./-]+\.ts:\d+:\d+/);
    expect(stack).not.toContain("dist/cli/");
  }, 300_000);

  it("a long-lived command stops when the process that started it is killed", async () => {
    const scratch = await mkdtemp(path.join(tmpdir(), "tributary-entry-parent-"));
    const log = path.join(scratch, "api.log");
    try {
      // The parent starts `tributary api` with its output in a file, prints the child's pid, and waits to be killed.
      const parentScript = `
        const { spawn } = require("node:child_process");
        const fs = require("node:fs");
        const out = fs.openSync(${JSON.stringify(log)}, "a");
        const child = spawn(process.execPath, [${JSON.stringify(BIN)}, "api", "--port", "0", "--insecure-no-auth"], { stdio: ["ignore", out, out] });
        console.log(child.pid);
        setInterval(() => {}, 60000);
      `;
      const parent = spawn(process.execPath, ["-e", parentScript], {
        cwd: ROOT,
        env: { ...process.env, ...env() },
        stdio: ["ignore", "pipe", "inherit"],
      });
      const childPid = await new Promise<number>((resolve) => parent.stdout.once("data", (d: Buffer) => resolve(Number(String(d).trim()))));
      try {
        await eventually(
          async () => ((await readFile(log, "utf8").catch(() => "")).includes("serving the API") ? true : undefined),
          240_000,
          "tributary api to serve",
        );
        parent.kill("SIGKILL");
        await eventually(
          async () => (alive(childPid) ? undefined : true),
          60_000,
          `tributary api (pid ${childPid}) to stop after its parent died`,
        );
        const output = await readFile(log, "utf8");
        expect(output).toContain(`the parent process ${parent.pid} is gone: stopping`);
        expect(output).toContain("SIGTERM: stopping");
      } finally {
        parent.kill("SIGKILL");
        if (alive(childPid)) process.kill(childPid, "SIGKILL");
      }
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }, 360_000);
});
