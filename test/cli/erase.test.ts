import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describePostgres, useCommandStore } from "../support/pg.js";
import { cliBudget, runCli } from "./run-cli.js";

// `tributary erase` in its own process on a database of its own, with no server: a dry run, a request carried out in
// the process (--wait), its proof report, the listing, and bad input, each a real command.
let defsDir: string;

beforeAll(async () => {
  defsDir = await mkdtemp(path.join(tmpdir(), "tributary-cli-erase-defs-"));
  await writeFile(
    path.join(defsDir, "erase.ts"),
    `import { asset, daily } from "tributary";
const days = daily({ start: "2025-01-06", end: "2025-01-09" });
export const customers = asset({ key: "ce/customers", partitions: days, metadata: { pii: ["email"] } },
  async (ctx) => ({ day: ctx.partition.key, email: "a@example.com" }));
export const profiles = asset(
  { key: "ce/profiles", partitions: days, deps: { customers },
    erase: async (ctx, { partitions }) => ctx.log("removed " + partitions.join(", ") + " from the warehouse") },
  async (_ctx, { customers }) => ({ day: customers.day }));
`,
  );
});

afterAll(async () => {
  await rm(defsDir, { recursive: true, force: true });
});

interface RequestJson {
  id: string;
  state: string;
  assetKey: string;
  partitionKeys: string[];
  reason: string | null;
  itemCount: number;
  erasedCount: number;
  finishedAt: string | null;
}

describePostgres("tributary erase (in-process)", () => {
  const at = useCommandStore("tributary-cli-erase-");
  const cli = (args: string[]) =>
    runCli([...args, "--data-dir", at.dataDir, "--definitions", defsDir, "--url", "http://127.0.0.1:9"], { env: at.env });

  it(
    "erases partitions and what was derived from them in the process, proves it, lists it; bad input exits 1 naming it",
    { timeout: cliBudget(7) },
    async () => {
      const seeded = await cli([
        "materialize",
        "ce/customers",
        "ce/profiles",
        "--from",
        "2025-01-06",
        "--to",
        "2025-01-08",
        "--wait",
        "--json",
      ]);
      expect(seeded.code, seeded.stderr).toBe(0);

      const dry = await cli(["erase", "ce/customers", "--partition", "2025-01-07", "--dry-run"]);
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toContain('would erase 1 partition(s) of "ce/customers": "2025-01-07"');
      expect(dry.stdout).toContain("2 partition(s) of 2 asset(s) erased, 2 with a stored output");
      expect(dry.stdout).toMatch(/ce\/customers\s+1\s+yes\s+-/);
      expect(dry.stdout).toMatch(/ce\/profiles\s+1\s+-\s+yes/);
      expect(dry.stdout).toContain("nothing was recorded (--dry-run)");

      // No server: --wait carries the request out in this process, to the end.
      const erased = await cli(["erase", "ce/customers", "--partition", "2025-01-07", "--reason", "customer asked", "--wait", "--json"]);
      expect(erased.code, erased.stderr).toBe(0);
      expect(erased.stderr).toContain("carrying out the erasure in this process");
      expect(erased.stderr).toMatch(/rematerialising \(2\/2 partition\(s\) erased, backfill [0-9a-f-]{36}\)/);
      const plan = JSON.parse(erased.stdout) as { ok: boolean; partitionCount: number; dryRun: boolean; request: RequestJson };
      expect(plan).toMatchObject({ ok: true, partitionCount: 2, dryRun: false });
      expect(plan.request).toMatchObject({
        state: "done",
        assetKey: "ce/customers",
        partitionKeys: ["2025-01-07"],
        reason: "customer asked",
        itemCount: 2,
        erasedCount: 2,
      });
      const id = plan.request.id;

      const shown = await cli(["erase", "show", id, "--json"]);
      expect(shown.code, shown.stderr).toBe(0);
      const report = JSON.parse(shown.stdout) as {
        ok: boolean;
        request: RequestJson;
        items: {
          assetKey: string;
          partitionKey: string;
          erasedAt: string | null;
          replacedByEventId: number | null;
          replacedAt: string | null;
        }[];
        deletions: { kind: string; assetKey: string; partitionKey: string; ref: string | null; deletedAt: string }[];
        hookCalls: { assetKey: string; partitionKeys: string[]; state: string; log: string[] }[];
      };
      expect(report.ok).toBe(true);
      expect(report.request).toMatchObject({ id, state: "done" });
      expect(report.request.finishedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(
        report.deletions
          .filter((d) => d.kind === "output")
          .map((d) => `${d.assetKey}@${d.partitionKey}`)
          .sort(),
      ).toEqual(["ce/customers@2025-01-07", "ce/profiles@2025-01-07"]);
      expect(report.deletions.filter((d) => d.kind === "log")).toHaveLength(2);
      for (const d of report.deletions) expect(d.deletedAt).toMatch(/Z$/);
      expect(report.hookCalls).toEqual([
        expect.objectContaining({
          assetKey: "ce/profiles",
          partitionKeys: ["2025-01-07"],
          state: "success",
          log: ["removed 2025-01-07 from the warehouse"],
        }),
      ]);
      // Each erased partition was materialised again from the cleaned source: its replacement is named.
      for (const item of report.items) {
        expect(item.erasedAt, item.assetKey).not.toBeNull();
        expect(item.replacedByEventId, item.assetKey).toEqual(expect.any(Number));
        expect(item.replacedAt).toMatch(/Z$/);
      }

      const listed = await cli(["erase", "list"]);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toMatch(new RegExp(`${id}\\s+done\\s+ce/customers\\s+2025-01-07\\s+2/2\\s+local`));

      const unknown = await cli(["erase", "ce/custmers", "--partition", "2025-01-07"]);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr.trim()).toBe('error [GRAPH_UNKNOWN_ASSET] no asset has the key "ce/custmers"; did you mean "ce/customers"?');

      const invalid = await cli(["erase", "ce/customers", "--partition", "2025-02-20", "--json"]);
      expect(invalid.code).toBe(1);
      expect(JSON.parse(invalid.stdout)).toMatchObject({ ok: false, error: { code: "ERASURE_PARTITION_INVALID" } });
      expect(invalid.stdout).toContain('"2025-02-20"');
    },
  );
});
