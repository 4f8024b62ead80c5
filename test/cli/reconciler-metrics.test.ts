import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { launchRun } from "../../src/api/index.js";
import { GraphCache, PgDefinitionStore, PgRunStore } from "../../src/storage/index.js";
import { parsePrometheusText, sample } from "../api/metrics-text.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { eventually, freePort, runCli, startCli } from "./run-cli.js";
import { RUN_DECISIONS } from "../../src/planner/index.js";

// `tributary reconciler --metrics-port`: a reconciler running as its own process serves its pass
// and task metrics over real HTTP, as Prometheus scrapes it.
const DEFS = `
import { asset } from "tributary";
export const one = asset({ key: "rm/one" }, async () => 1);
`;

describePostgres("tributary reconciler --metrics-port", () => {
  const database = useTestDatabase();
  let defsDir: string;
  let dataDir: string;

  beforeAll(async () => {
    defsDir = await mkdtemp(path.join(tmpdir(), "tributary-recm-defs-"));
    dataDir = await mkdtemp(path.join(tmpdir(), "tributary-recm-data-"));
    await writeFile(path.join(defsDir, "one.ts"), DEFS);
  });

  afterAll(async () => {
    await rm(defsDir, { recursive: true, force: true });
    await rm(dataDir, { recursive: true, force: true });
  });

  /** Waits for the process to say it is running; fails with its output. */
  async function running(child: ReturnType<typeof startCli>): Promise<void> {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`it exited with code ${child.exitCode}`);
        return child.output().includes("is running") ? true : undefined;
      },
      120_000,
      "the reconciler to start",
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${child.output()}`);
    });
  }

  const base = () => ["reconciler", "--definitions", defsDir, "--data-dir", dataDir, "--processes", "1"];

  it("serves /metrics (passes, tasks, steps handed out, process metrics), /healthz and /readyz; stops on SIGTERM", async () => {
    const port = freePort();
    const reconciler = startCli([...base(), "--metrics-port", String(port)], { env: { DATABASE_URL: database.url } });
    try {
      await running(reconciler);
      expect(reconciler.output()).toContain(`serving metrics at http://127.0.0.1:${port}/metrics`);
      const definitions = new PgDefinitionStore(database.db);
      const runs = new PgRunStore(database.db, RUN_DECISIONS);
      const { runId } = await launchRun({ graphs: new GraphCache(definitions), runs, definitions }, { assetKeys: ["rm/one"] }, new Date());
      await eventually(
        async () => ((await runs.getRunSummary(runId))?.status === "success" ? true : undefined),
        60_000,
        "the run to succeed",
      );

      const text = await eventually(
        async () => {
          const res = await fetch(`http://127.0.0.1:${port}/metrics`);
          expect(res.status).toBe(200);
          expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
          // A scraper's idle connection is closed by the scraper, never under it (see tributary api).
          expect(res.headers.get("keep-alive")).toBe("timeout=65");
          const parsed = parsePrometheusText(await res.text());
          return sample(parsed, "tributary_reconciler_dispatched_steps_total", {}) >= 1 ? parsed : undefined;
        },
        30_000,
        "the dispatched step to be counted",
      );
      expect(sample(text, "tributary_reconciler_pass_duration_seconds_count", { outcome: "ok" })).toBeGreaterThan(0);
      expect(text.families.get("tributary_reconciler_task_duration_seconds")?.type).toBe("histogram");
      for (const task of ["automation", "backfills", "alerts"]) {
        expect(sample(text, "tributary_reconciler_task_duration_seconds_count", { task, outcome: "ok" }), task).toBeGreaterThan(0);
      }
      expect(sample(text, "tributary_process_resident_memory_bytes", {})).toBeGreaterThan(0);
      // Database-wide series are the API's: a reconciler does not repeat them.
      expect(text.samples.some((s) => s.name === "tributary_steps" || s.name === "tributary_queue_depth")).toBe(false);

      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: "ready", problems: [], dependencies: [{ name: "postgres", up: true }] });
      const other = await fetch(`http://127.0.0.1:${port}/graphql`);
      expect(other.status).toBe(404);
      expect(((await other.json()) as { error: { code: string } }).error.code).toBe("NOT_FOUND");
    } finally {
      reconciler.kill("SIGTERM");
    }
    const code = await new Promise<number | null>((resolve) => reconciler.once("exit", (c) => resolve(c)));
    expect(code, reconciler.output()).toBe(0);
  }, 240_000);

  it("takes the port from TRIBUTARY_METRICS_PORT, and refuses a bad one naming where it came from", async () => {
    const port = freePort();
    const fromEnv = startCli(base(), { env: { DATABASE_URL: database.url, TRIBUTARY_METRICS_PORT: String(port) } });
    try {
      await running(fromEnv);
      // Passes run from the start: the fallback timer wakes the reconciler every second.
      await eventually(
        async () => {
          const text = parsePrometheusText(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
          return text.samples.some((x) => x.name === "tributary_reconciler_pass_duration_seconds_count" && x.value >= 2) ? true : undefined;
        },
        30_000,
        "passes to be counted",
      );
    } finally {
      fromEnv.kill("SIGTERM");
    }
    await new Promise((resolve) => fromEnv.once("exit", resolve));

    const badFlag = await runCli([...base(), "--metrics-port", "http"], { env: { DATABASE_URL: database.url } });
    expect(badFlag.code).not.toBe(0);
    expect(badFlag.stderr).toContain('--metrics-port: "http" is not a port number');
    const badEnv = await runCli(base(), { env: { DATABASE_URL: database.url, TRIBUTARY_METRICS_PORT: "99999" } });
    expect(badEnv.code).not.toBe(0);
    expect(badEnv.stderr).toContain('TRIBUTARY_METRICS_PORT: "99999" is not a port number');
  }, 240_000);
});
