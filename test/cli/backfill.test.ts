import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { commandStore, describePostgres, useCommandStore } from "../support/pg.js";
import { eventually, freePort, runCli, startCli } from "./run-cli.js";

let defsDir: string;
let markers: string;

beforeAll(async () => {
  defsDir = await mkdtemp(path.join(tmpdir(), "tributary-cli-backfill-defs-"));
  markers = await mkdtemp(path.join(tmpdir(), "tributary-cli-backfill-markers-"));
  await writeFile(
    path.join(defsDir, "backfill.ts"),
    `import { existsSync } from "node:fs";
import { asset, daily, dep, timeWindow, weekly } from "tributary";
const days = daily({ start: "2025-01-06" });
export const up = asset({ key: "bf/up", partitions: days, retries: 0 }, async (ctx) => {
  if (existsSync(${JSON.stringify(markers)} + "/fail-" + ctx.partition.key)) throw new Error("marker says fail " + ctx.partition.key);
  return ctx.partition.key;
});
export const day = asset({ key: "bf/day", partitions: days, deps: { up } }, async (ctx, { up }) => ({ day: up }));
export const week = asset({ key: "bf/week", partitions: weekly({ start: "2025-01-06" }), deps: { day: dep(day, timeWindow()) } }, async (ctx, { day }) => day.length);
`,
  );
});

afterAll(async () => {
  for (const dir of [defsDir, markers]) await rm(dir, { recursive: true, force: true });
});

interface BackfillJson {
  ok: boolean;
  backfill: {
    id: string;
    status: string;
    requested: number;
    done: number;
    failed: number;
    runsCreated: number;
    retryOf: string | null;
    failedPartitions: { assetKey: string; count: number; ranges: { from: string; to: string }[] }[];
  };
}

describePostgres("tributary backfill (in-process, no server)", () => {
  const at = useCommandStore("tributary-cli-backfill-");
  const cli = (args: string[]) =>
    runCli([...args, "--data-dir", at.dataDir, "--definitions", defsDir, "--url", "http://127.0.0.1:9"], { env: at.env });

  it("runs a backfill to the end, reports failed partitions with exit code 1, re-runs only those; bad input exits 1", async () => {
    const r = await cli([
      "backfill",
      "bf/up",
      "bf/day",
      "bf/week",
      "--from",
      "2025-01-06",
      "--to",
      "2025-01-12",
      "--max-runs",
      "2",
      "--processes",
      "1",
      "--json",
    ]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as BackfillJson;
    expect(out.ok).toBe(true);
    expect(out.backfill).toMatchObject({ status: "completed", requested: 15, done: 15, failed: 0, runsCreated: 7 });

    await writeFile(path.join(markers, "fail-2025-01-15"), "");
    const failing = await cli([
      "backfill",
      "bf/up",
      "bf/day",
      "--from",
      "2025-01-13",
      "--to",
      "2025-01-16",
      "--max-partitions-per-run",
      "2",
      "--processes",
      "1",
    ]);
    expect(failing.code, failing.stderr).toBe(1);
    expect(failing.stdout).toMatch(/failed — 6\/8 partitions done, 2 failed/);
    expect(failing.stdout).toMatch(/failed bf\/up: 1 \(2025-01-15\)/);
    const id = /backfill ([0-9a-f-]{36})/.exec(failing.stdout)![1]!;
    expect(failing.stdout).toContain(`tributary backfill retry-failed ${id}`);

    await rm(path.join(markers, "fail-2025-01-15"));
    const retry = await cli(["backfill", "retry-failed", id, "--json", "--processes", "1"]);
    expect(retry.code, retry.stderr).toBe(0);
    const retried = JSON.parse(retry.stdout) as BackfillJson;
    expect(retried.backfill).toMatchObject({ status: "completed", requested: 2, done: 2, retryOf: id });

    const list = await cli(["backfills", "--json"]);
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as { backfills: { status: string }[] }).backfills.map((b) => b.status)).toEqual([
      "completed",
      "failed",
      "completed",
    ]);
    const show = await cli(["backfill", "show", id]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toMatch(/pacing: 1 run\(s\) at once, 2 partition\(s\) per run, priority -10/);

    const outside = await cli(["backfill", "bf/up", "--from", "2024-12-01", "--to", "2025-01-10"]);
    expect(outside.code).toBe(1);
    expect(outside.stderr).toMatch(/bf\/up.*existing partitions at .*"2025-01-06" … /s);
    const unknown = await cli(["backfill", "bf/dya", "--from", "2025-01-06", "--to", "2025-01-10"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/GRAPH_UNKNOWN_ASSET.*bf\/day/s);
    const cancelDone = await cli(["backfill", "cancel", id]);
    expect(cancelDone.code).toBe(1);
    expect(cancelDone.stderr).toMatch(/BACKFILL_NOT_ACTIVE/);
  }, 240_000);

  it("through a running `tributary dev`: launched over GraphQL, advanced by its reconciler, followed to the end", async () => {
    const devStore = await commandStore("tributary-cli-backfill-dev-");
    const port = freePort();
    const url = `http://127.0.0.1:${port}`;
    const dev = startCli(["dev", "--port", String(port), "--data-dir", devStore.dataDir, "--definitions", defsDir, "--processes", "1"], {
      env: devStore.env,
    });
    try {
      await eventually(
        async () => ((await fetch(`${url}/healthz`)).ok ? true : undefined),
        90_000,
        () => `dev to start\n${dev.output()}`,
      );
      // Without --wait the command returns at once; the server's reconciler runs it.
      const started = await runCli([
        "backfill",
        "bf/up",
        "bf/day",
        "--from",
        "2025-01-06",
        "--to",
        "2025-01-09",
        "--max-runs",
        "2",
        "--json",
        "--url",
        url,
      ]);
      expect(started.code, started.stderr).toBe(0);
      const id = (JSON.parse(started.stdout) as BackfillJson).backfill.id;
      const done = await eventually(
        async () => {
          const r = await runCli(["backfill", "show", id, "--json", "--url", url]);
          const b = (JSON.parse(r.stdout) as BackfillJson).backfill;
          return b.status === "completed" ? b : undefined;
        },
        60_000,
        "the backfill to complete",
      );
      expect(done).toMatchObject({ requested: 8, done: 8, failed: 0, runsCreated: 4 });

      const waited = await runCli(["backfill", "bf/up", "--partition", "2025-01-10", "2025-01-11", "--wait", "--json", "--url", url]);
      expect(waited.code, waited.stderr).toBe(0);
      expect((JSON.parse(waited.stdout) as BackfillJson).backfill).toMatchObject({ status: "completed", requested: 2, done: 2 });

      const list = await runCli(["backfills", "--json", "--url", url]);
      expect((JSON.parse(list.stdout) as { backfills: unknown[] }).backfills).toHaveLength(2);
      const bad = await runCli(["backfill", "cancel", id, "--url", url]);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/BACKFILL_NOT_ACTIVE/);
      const outside = await runCli(["backfill", "bf/up", "--from", "2024-12-01", "--to", "2025-01-10", "--json", "--url", url]);
      expect(outside.code).toBe(1);
      expect(outside.stdout).toMatch(/existing partitions at/);
    } finally {
      dev.kill("SIGTERM");
      await new Promise((resolve) => dev.once("exit", resolve));
      await devStore.remove();
    }
  }, 240_000);
});
