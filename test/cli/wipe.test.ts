import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describePostgres, useCommandStore } from "../support/pg.js";
import { cliBudget, runCli } from "./run-cli.js";

// `tributary wipe` in its own process on a database of its own: a dry run, a wipe, and bad input, each a real command.
let defsDir: string;

beforeAll(async () => {
  defsDir = await mkdtemp(path.join(tmpdir(), "tributary-cli-wipe-defs-"));
  await writeFile(
    path.join(defsDir, "wipe.ts"),
    `import { asset, daily } from "tributary";
const days = daily({ start: "2025-01-06", end: "2025-01-12" });
export const day = asset({ key: "cw/day", partitions: days }, async (ctx) => ({ day: ctx.partition.key }));
`,
  );
});

afterAll(async () => {
  await rm(defsDir, { recursive: true, force: true });
});

type WipeJson = {
  ok: boolean;
  assetKey: string;
  partitionCount: number;
  partitionKeys: string[];
  statusesRemoved: number;
  materializationsRemoved: number;
  outputsRemoved: number;
  dryRun: boolean;
};

describePostgres("tributary wipe (in-process)", () => {
  // No server listens on port 9: every command works in-process on the database.
  const at = useCommandStore("tributary-cli-wipe-");
  const cli = (args: string[]) =>
    runCli([...args, "--data-dir", at.dataDir, "--definitions", defsDir, "--url", "http://127.0.0.1:9"], { env: at.env });

  it(
    "wipes chosen partitions (a dry run first, which removes nothing); bad input exits 1 naming it",
    { timeout: cliBudget(5) },
    async () => {
      const seeded = await cli(["materialize", "cw/day", "--from", "2025-01-06", "--to", "2025-01-09", "--wait", "--json"]);
      expect(seeded.code, seeded.stderr).toBe(0);

      const dry = await cli(["wipe", "cw/day", "--partition", "2025-01-07", "--partition", "2025-01-08", "--dry-run"]);
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toContain('would wipe 2 partition(s) of "cw/day": "2025-01-07", "2025-01-08"');
      expect(dry.stdout).toContain("2 status(es), 2 materialisation(s)");
      expect(dry.stdout).toContain("nothing was removed (--dry-run)");

      const wiped = await cli(["wipe", "cw/day", "--from", "2025-01-07", "--to", "2025-01-08", "--reason", "test data", "--json"]);
      expect(wiped.code, wiped.stderr).toBe(0);
      expect(JSON.parse(wiped.stdout) as WipeJson).toMatchObject({
        ok: true,
        assetKey: "cw/day",
        partitionCount: 2,
        partitionKeys: ["2025-01-07", "2025-01-08"],
        statusesRemoved: 2,
        materializationsRemoved: 2,
        outputsRemoved: 2,
        dryRun: false,
      });

      // The wiped partitions are missing, the others still materialised.
      const listed = await cli(["partitions", "cw/day", "--json"]);
      expect(listed.code, listed.stderr).toBe(0);
      const statuses = Object.fromEntries(
        (JSON.parse(listed.stdout) as { partitions: { key: string; status: string }[] }).partitions.map((p) => [p.key, p.status]),
      );
      expect(statuses).toMatchObject({
        "2025-01-06": "materialized",
        "2025-01-07": "missing",
        "2025-01-08": "missing",
        "2025-01-09": "materialized",
      });

      const bad = await cli(["wipe", "cw/day", "--partition", "2025-01-20", "--json"]);
      expect(bad.code).toBe(1);
      expect(JSON.parse(bad.stdout)).toMatchObject({ ok: false, error: { code: "PARTITION_KEY_INVALID" } });
      expect(bad.stdout).toContain("2025-01-20");
    },
  );
});
