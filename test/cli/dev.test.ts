import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePrometheusText, sample } from "../api/metrics-text.js";
import { eventually, freePort, graphqlAt, runCli, startCli } from "./run-cli.js";

// `tributary dev` as a user runs it: a real process, real HTTP, the embedded database.
let dataDir: string;
let defsDir: string;

const asset = (key: string, extra = "") =>
  `import { asset, daily } from "tributary";\nexport const a = asset({ key: "${key}", partitions: daily({ start: "2025-01-01" })${extra} }, async (ctx) => ({ day: ctx.partition.key }));\n`;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "tributary-dev-data-"));
  defsDir = await mkdtemp(path.join(tmpdir(), "tributary-dev-defs-"));
  await writeFile(path.join(defsDir, "one.ts"), asset("dev/one"));
});

afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
  await rm(defsDir, { recursive: true, force: true });
});

type Assets = { assets: { key: string }[]; definitionErrors: { path: string; code: string | null; message: string | null }[] };
const QUERY = "{ assets { key } definitionErrors { path code message } }";

describe("tributary dev", () => {
  it("serves the definitions, reloads on change, runs materialisations, and stops cleanly", async () => {
    const port = freePort();
    const dev = startCli(["dev", "--port", String(port), "--data-dir", dataDir, "--definitions", defsDir, "--processes", "1"]);
    try {
      const first = await eventually(
        async () => {
          const r = await graphqlAt<Assets>(port, QUERY);
          return r.data?.assets.length ? r.data : undefined;
        },
        90_000,
        () => `dev to answer GraphQL\n${dev.output()}`,
      );
      expect(first.assets.map((a) => a.key)).toEqual(["dev/one"]);
      expect(first.definitionErrors).toEqual([]);

      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(health.status).toBe(200);

      // A new file appears: reloaded without a restart.
      await writeFile(path.join(defsDir, "two.ts"), asset("dev/two"));
      await eventually(
        async () => {
          const r = await graphqlAt<Assets>(port, QUERY);
          return r.data?.assets.some((a) => a.key === "dev/two") ? true : undefined;
        },
        30_000,
        "dev/two to appear",
      );

      // The file breaks: its error is reported, its last good asset and every other file stay.
      await writeFile(path.join(defsDir, "two.ts"), `${asset("dev/two")}\nthrow new Error("broken on purpose");\n`);
      const broken = await eventually(
        async () => {
          const r = await graphqlAt<Assets>(port, QUERY);
          return r.data?.definitionErrors.length ? r.data : undefined;
        },
        30_000,
        "the load error to be reported",
      );
      expect(broken.definitionErrors[0]).toMatchObject({ path: "two.ts", code: "LOAD_IMPORT_ERROR" });
      expect(broken.definitionErrors[0]?.message).toContain("broken on purpose");
      expect(broken.assets.map((a) => a.key).sort()).toEqual(["dev/one", "dev/two"]);

      // Operational commands go through the running server.
      const run = await runCli([
        "materialize",
        "dev/one",
        "--from",
        "2025-01-01",
        "--to",
        "2025-01-03",
        "--wait",
        "--json",
        "--url",
        `http://127.0.0.1:${port}`,
      ]);
      expect(run.code, run.stderr).toBe(0);
      const out = JSON.parse(run.stdout) as { run: { status: string; steps: { state: string }[] } };
      expect(out.run.status).toBe("success");
      expect(out.run.steps.map((s) => s.state)).toEqual(["success", "success", "success"]);

      const runs = await runCli(["runs", "--json", "--url", `http://127.0.0.1:${port}`]);
      expect((JSON.parse(runs.stdout) as { runs: unknown[] }).runs).toHaveLength(1);

      // Its reconciler's passes and tasks are on the API port's /metrics, with the database-wide series.
      const metrics = parsePrometheusText(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
      expect(sample(metrics, "tributary_reconciler_pass_duration_seconds_count", { outcome: "ok" })).toBeGreaterThan(0);
      expect(sample(metrics, "tributary_reconciler_task_duration_seconds_count", { task: "automation", outcome: "ok" })).toBeGreaterThan(0);
      expect(sample(metrics, "tributary_runs", { status: "running" })).toBe(0);
    } finally {
      dev.kill("SIGTERM");
    }
    const code = await new Promise<number | null>((resolve) => dev.once("exit", (c) => resolve(c)));
    expect(code, dev.output()).toBe(0);

    // The data directory was released: a command can open it now, and the run is still there.
    const after = await runCli(["runs", "--json", "--data-dir", dataDir, "--definitions", defsDir, "--url", "http://127.0.0.1:9"]);
    expect(after.code, after.stderr).toBe(0);
    expect((JSON.parse(after.stdout) as { runs: { status: string }[] }).runs.map((r) => r.status)).toEqual(["success"]);
  }, 240_000);

  it("refuses a second process on the same data directory with a clear error", async () => {
    const port = freePort();
    const dev = startCli(["dev", "--port", String(port), "--data-dir", dataDir, "--definitions", defsDir, "--processes", "1"]);
    try {
      await eventually(async () => ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok ? true : undefined), 90_000, "dev to start");
      // A one-off command goes to the server whose URL the directory's lock names...
      const asked = await runCli(["runs", "--json", "--data-dir", dataDir, "--definitions", defsDir, "--url", "http://127.0.0.1:9"]);
      expect(asked.code, asked.stderr).toBe(0);
      expect(asked.stderr).toContain(`asking the Tributary server at http://127.0.0.1:${port}`);
      // ...and a second server on the directory is refused, naming the one that holds it.
      const second = await runCli([
        "dev",
        "--port",
        String(freePort()),
        "--data-dir",
        dataDir,
        "--definitions",
        defsDir,
        "--processes",
        "1",
      ]);
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(/DATA_DIR_LOCKED/);
      expect(second.stderr).toContain(dataDir);
      expect(second.stderr).toContain(`which serves the API at http://127.0.0.1:${port}`);
    } finally {
      dev.kill("SIGTERM");
      await new Promise((resolve) => dev.once("exit", resolve));
    }
  }, 180_000);
});
