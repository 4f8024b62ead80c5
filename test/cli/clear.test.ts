import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describePostgres, useCommandStore } from "../support/pg.js";
import { runCli } from "./run-cli.js";

let defsDir: string;

beforeAll(async () => {
  defsDir = await mkdtemp(path.join(tmpdir(), "tributary-cli-clear-defs-"));
  await writeFile(
    path.join(defsDir, "clear.ts"),
    `import { asset, daily, dep, timeWindow, weekly } from "tributary";
const days = daily({ start: "2025-01-06" });
export const up = asset({ key: "cl/up", partitions: days }, async (ctx) => ctx.partition.key);
export const day = asset({ key: "cl/day", partitions: days, deps: { up } }, async (ctx, { up }) => ({ day: up }));
export const week = asset({ key: "cl/week", partitions: weekly({ start: "2025-01-06" }), deps: { day: dep(day, timeWindow()) } }, async (ctx, { day }) => day.length);
`,
  );
});

afterAll(async () => {
  await rm(defsDir, { recursive: true, force: true });
});

describePostgres("tributary clear (in-process, no server)", () => {
  // A database of its own (Postgres; what clear does is the same on the embedded one) and a data directory.
  const at = useCommandStore("tributary-cli-clear-");
  const globals = () => ["--data-dir", at.dataDir, "--definitions", defsDir, "--url", "http://127.0.0.1:9"];

  it("reruns the chosen days and the affected week, not upstream; bad input exits 1 without a run", async () => {
    const seeded = await runCli(
      ["materialize", "cl/up", "cl/day", "cl/week", "--from", "2025-01-06", "--to", "2025-01-12", "--json", ...globals()],
      { env: at.env },
    );
    expect(seeded.code, seeded.stderr).toBe(0);

    const r = await runCli(
      ["clear", "cl/day", "--from", "2025-01-08", "--to", "2025-01-09", "--downstream", "--wait", "--json", ...globals()],
      { env: at.env },
    );
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as {
      ok: boolean;
      run: { origin: string; status: string; steps: { assetKey: string; partitionKey: string }[] };
      cleared: { assetKey: string; count: number }[];
    };
    expect(out.ok).toBe(true);
    expect(out.run).toMatchObject({ origin: "rerun", status: "success" });
    expect(out.run.steps.map((s) => `${s.assetKey}@${s.partitionKey}`)).toEqual([
      "cl/day@2025-01-08",
      "cl/day@2025-01-09",
      "cl/week@2025-01-06",
    ]);
    expect(out.cleared).toEqual([
      { assetKey: "cl/day", count: 2, sample: ["2025-01-08", "2025-01-09"] },
      { assetKey: "cl/week", count: 1, sample: ["2025-01-06"] },
    ]);

    const bad = await runCli(["clear", "cl/day", "--from", "2025-01-09", "--to", "2025-01-08", ...globals()], { env: at.env });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/cl\/day/);
    const nothing = await runCli(["clear", "cl/day", "--only-failed", ...globals()], { env: at.env });
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toMatch(/nothing to clear/);

    const runs = await runCli(["runs", "--json", ...globals()], { env: at.env });
    expect(runs.code, runs.stderr).toBe(0);
    expect(runs.stdout.match(/"origin":\s*"rerun"/g)).toHaveLength(1);
  }, 120_000);
});
