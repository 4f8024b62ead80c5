import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openPostgres } from "../../src/storage/index.js";
import { describePostgres, useCommandStore } from "../support/pg.js";
import { runCli } from "./run-cli.js";

// No server listens on port 9: every command works in-process on its own database.
const NO_SERVER = ["--url", "http://127.0.0.1:9"];

const DEFS = `
import { asset, check, daily } from "tributary";
const days = daily({ start: "2025-01-01", end: "2025-01-11" });
export const orders = asset({ key: "cr/orders", partitions: days }, async (ctx) => ({ rows: ctx.partition.key === "2025-01-03" ? 0 : 10 }));
export const notEmpty = check(orders, { name: "not_empty", blocking: true }, (_ctx, value) => ({ passed: value.rows > 0, metadata: { rows: value.rows } }));
export const small = check(orders, { name: "small", severity: "warn" }, (_ctx, value) => ({ passed: value.rows < 100 }));
`;

let defsDir: string;

beforeAll(async () => {
  defsDir = await mkdtemp(path.join(tmpdir(), "tributary-check-run-defs-"));
  await writeFile(path.join(defsDir, "orders.ts"), DEFS);
});
afterAll(async () => {
  await rm(defsDir, { recursive: true, force: true });
});

describePostgres("tributary check-run (in-process)", () => {
  // A database of its own (Postgres; what check-run does is the same on the embedded one) and a data directory.
  const at = useCommandStore("tributary-check-run-data-");
  const cli = (...args: string[]) => runCli([...args, "--definitions", defsDir, "--data-dir", at.dataDir, ...NO_SERVER], { env: at.env });

  it("runs the checks on the latest materialisation, prints each result and exits 1 when one failed; bad input creates no run", async () => {
    // Three days materialised; the blocking check fails on the 3rd (so does the run).
    const materialized = await cli("materialize", "cr/orders", "--from", "2025-01-01", "--to", "2025-01-03");
    expect(materialized.code, materialized.stdout + materialized.stderr).toBe(1);

    const r = await cli("check-run", "cr/orders", "--partition", "2025-01-02", "--partition", "2025-01-03", "--wait");
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(/^run [0-9a-f-]{36}: failed$/m);
    expect(r.stdout).toMatch(/^not_empty\s+2025-01-02\s+passed\s+\{"rows":10\}$/m);
    expect(r.stdout).toMatch(/^small\s+2025-01-02\s+passed\s+\{\}$/m);
    expect(r.stdout).toMatch(/^not_empty\s+2025-01-03\s+failed\s+\{"rows":0\}$/m);
    expect(r.stdout).toMatch(/^small\s+2025-01-03\s+passed/m);
    expect(r.stdout).toMatch(/✗ 1 of 4 check result\(s\) failed/);

    const unknown = await cli("check-run", "cr/orders", "--partition", "2025-01-02", "--check", "nope");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/CHECK_UNKNOWN.*asset "cr\/orders" has no check "nope"; its checks are "not_empty", "small"/);
    // The other bad inputs (a partition never materialised, no checks, bad keys) are covered through the API in
    // test/api/checks.test.ts: the CLI passes them through the same command.

    // Only the materialisation and the one check run exist; the check run has check steps only.
    const handle = await openPostgres({ kind: "postgres", url: at.databaseUrl });
    try {
      const runs = await sql<{ tags: Record<string, string>; steps: number; check_steps: number }>`
        select r.tags, count(s.id)::int as steps, count(s.check_name)::int as check_steps
        from runs r join steps s on s.run_id = r.id group by r.id order by r.created_at`.execute(handle.db);
      expect(runs.rows).toEqual([
        { tags: {}, steps: 9, check_steps: 6 },
        { tags: { checks: "cr/orders" }, steps: 4, check_steps: 4 },
      ]);
    } finally {
      await handle.close();
    }
  }, 240_000);
});
