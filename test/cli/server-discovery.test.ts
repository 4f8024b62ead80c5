import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readLockHolder } from "../../src/storage/index.js";
import { ROOT, runCli, startDev, type DevServer } from "./run-cli.js";

// Which server an operational command asks: the one that serves the project the command names, found through
// --url, TRIBUTARY_URL or the data directory's lock; never one that serves another project.
const NOBODY = "http://127.0.0.1:9";
const HELLO = path.join(ROOT, "examples/hello-world");

let work: string;
let project: string;
let dataDir: string;
let defsDir: string;
let dev: DevServer;

type RunsJson = { runs: { id: string }[] };

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), "tributary-discovery-"));
  project = path.join(work, "project");
  dataDir = path.join(project, ".tributary");
  defsDir = path.join(project, "defs");
  await mkdir(defsDir, { recursive: true });
  await writeFile(
    path.join(defsDir, "one.ts"),
    `import { asset, daily } from "tributary";\nexport const one = asset({ key: "disc/one", partitions: daily({ start: "2025-01-01" }) }, async (ctx) => ctx.partition.key);\n`,
  );
  dev = await startDev({ dataDir, definitionsDir: defsDir, seed: true });
  const launched = await runCli(["materialize", "disc/one", "--partition", "2025-01-01", "--wait", "--json", "--url", dev.url], {
    cwd: project,
  });
  expect(launched.code, launched.stderr + launched.stdout).toBe(0);
}, 240_000);

afterAll(async () => {
  await dev?.stop();
  await rm(work, { recursive: true, force: true });
});

describe("finding the server", () => {
  it("asks the server TRIBUTARY_URL names, and says on stderr which server answered", async () => {
    const r = await runCli(["runs", "--json"], { cwd: project, env: { TRIBUTARY_URL: dev.url } });
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as RunsJson).runs).toHaveLength(1);
    expect(r.stderr).toContain(
      `asking the Tributary server at ${dev.url} (the embedded database in ${path.join(dataDir, "db")}, definitions in ${defsDir})`,
    );
  }, 120_000);

  it("asks the server named by the data directory's lock when none answers at the configured URL, even while it is slow to answer", async () => {
    // Stopped, the server cannot answer the first look; the lock says it is alive and where it listens.
    const holder = readLockHolder(path.join(dataDir, "db"));
    expect(holder?.url).toBe(dev.url);
    process.kill(holder!.pid, "SIGSTOP");
    let resumed = false;
    const resume = () => {
      if (!resumed) process.kill(holder!.pid, "SIGCONT");
      resumed = true;
    };
    try {
      const pending = runCli(["runs", "--json", "--data-dir", dataDir], { cwd: work, env: { TRIBUTARY_URL: NOBODY } });
      // Longer than the first look at the configured URL waits; the command must keep asking the lock's holder.
      await new Promise((r) => setTimeout(r, 4_000));
      resume();
      const r = await pending;
      expect(r.code, r.stderr).toBe(0);
      expect((JSON.parse(r.stdout) as RunsJson).runs).toHaveLength(1);
      expect(r.stderr).toContain(`asking the Tributary server at ${dev.url}`);
    } finally {
      resume();
    }
  }, 180_000);

  it("works on another data directory in this process rather than asking a server that serves another", async () => {
    const other = path.join(work, "other-data");
    // A new embedded database takes a while to create on a loaded machine.
    const r = await runCli(["runs", "--json", "--data-dir", other, "--definitions", defsDir], {
      cwd: project,
      env: { TRIBUTARY_URL: dev.url },
      timeoutMs: 400_000,
    });
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as RunsJson).runs).toEqual([]);
    expect(r.stderr).not.toContain("asking the Tributary server");
  }, 420_000);

  it("refuses when --url names a server of another project", async () => {
    const other = path.join(work, "other-data");
    const r = await runCli(["runs", "--data-dir", other, "--url", dev.url], { cwd: project });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("[SERVER_MISMATCH]");
    expect(r.stderr).toContain(`the Tributary server at ${dev.url} (--url) serves the embedded database in ${path.join(dataDir, "db")}`);
    expect(r.stderr).toContain(path.join(other, "db"));

    const defs = await runCli(["partitions", "hello/greetings", "--definitions", HELLO, "--url", dev.url], { cwd: project });
    expect(defs.code).toBe(1);
    expect(defs.stderr).toContain(`loads the definitions in ${defsDir}, not ${HELLO}`);
  }, 120_000);

  it("refuses other definitions over the data directory a server holds, naming that server", async () => {
    // The data directory is the default one of this directory, which the server holds.
    const r = await runCli(["partitions", "hello/greetings", "--definitions", HELLO], { cwd: project, env: { TRIBUTARY_URL: dev.url } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("[SERVER_MISMATCH]");
    expect(r.stderr).toMatch(
      new RegExp(`the Tributary server at ${dev.url.replace(/[.:/]/g, "\\$&")} \\(process \\d+\\) holds the embedded database in `),
    );
    expect(r.stderr).toContain(`loads the definitions in ${defsDir}, not ${HELLO}`);

    // Through the lock alone, the same answer.
    const viaLock = await runCli(["partitions", "hello/greetings", "--definitions", HELLO], {
      cwd: project,
      env: { TRIBUTARY_URL: NOBODY },
    });
    expect(viaLock.code).toBe(1);
    expect(viaLock.stderr).toContain(`the Tributary server at ${dev.url}`);
    expect(viaLock.stderr).toContain(`not ${HELLO}`);
  }, 120_000);

  it("asks a server named by --url that serves the project named explicitly", async () => {
    const r = await runCli(["runs", "--json", "--data-dir", dataDir, "--definitions", defsDir, "--url", dev.url], { cwd: work });
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect((JSON.parse(r.stdout) as RunsJson).runs).toHaveLength(1);
    expect(r.stderr).toContain(`asking the Tributary server at ${dev.url}`);
  }, 120_000);
});
