import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { commandStore, describePostgres, type CommandStore } from "../support/pg.js";
import { runCli, startDev, type DevServer } from "./run-cli.js";

// `tributary clear <mapped asset> --run R --map-index N` on a partitioned fan-out, through `tributary dev`: the
// partition is found from the run when it is the only one, the command says which to choose otherwise, and a
// rerun that succeeds exits 0.
let root: string;
let dev: DevServer;
let store: CommandStore | undefined;
let defsDir: string;
let failDir: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "tributary-cli-clear-mapped-"));
  defsDir = path.join(root, "defs");
  failDir = path.join(root, "fail");
  await Promise.all([mkdir(defsDir), mkdir(failDir)]);
  // An item fails while a marker file of its partition and name exists: the test removes it to let a rerun pass.
  await writeFile(
    path.join(defsDir, "mapped.ts"),
    `import { existsSync } from "node:fs";
import { asset, daily } from "tributary";
const days = daily({ start: "2025-01-06" });
export const listing = asset({ key: "cm/listing", partitions: days }, async () => ({ files: ["a", "b", "c"] }));
export const parsed = asset(
  { key: "cm/parsed", partitions: days, deps: { listing }, map: ({ listing }) => listing?.files ?? [], mapLabel: (f) => f },
  async (ctx) => {
    if (existsSync(${JSON.stringify(failDir)} + "/" + ctx.partition.key + "-" + ctx.map.item)) throw new Error("marked to fail");
    return { file: ctx.map.item };
  },
);
`,
  );
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

type RunJson = {
  id: string;
  status: string;
  steps: { assetKey: string; partitionKey: string; mapIndex: number; state: string; tryNumber: number }[];
};

describePostgres("tributary clear --run --map-index on a partitioned fan-out", () => {
  beforeAll(async () => {
    store = await commandStore("tributary-cli-clear-mapped-data-");
    dev = await startDev({ dataDir: store.dataDir, env: store.env, definitionsDir: defsDir });
  }, 600_000);
  afterAll(async () => {
    await dev?.stop();
    await store?.remove();
  });

  const globals = () => ["--url", dev.url];
  const launch = async (range: string[]): Promise<RunJson> => {
    const r = await runCli(["materialize", "cm/listing", "cm/parsed", ...range, "--wait", "--json", ...globals()], { timeoutMs: 240_000 });
    expect(r.code, r.stderr).toBe(1); // the marked items fail
    return (JSON.parse(r.stdout) as { run: RunJson }).run;
  };

  it("finds the partition when the run has one, and exits 0 once the step succeeded", async () => {
    await writeFile(path.join(failDir, "2025-01-06-b"), "");
    const run = await launch(["--partition", "2025-01-06"]);
    expect(run.steps.find((s) => s.assetKey === "cm/parsed" && s.mapIndex === 1)?.state).toBe("failed");
    await rm(path.join(failDir, "2025-01-06-b"));

    const cleared = await runCli(["clear", "cm/parsed", "--run", run.id, "--map-index", "1", "--wait", "--json", ...globals()], {
      timeoutMs: 240_000,
    });
    expect(cleared.code, cleared.stderr + cleared.stdout).toBe(0);
    const out = JSON.parse(cleared.stdout) as { ok: boolean; run: RunJson };
    expect(out.ok).toBe(true);
    expect(out.run.status).toBe("success");
    const again = out.run.steps.find((s) => s.assetKey === "cm/parsed" && s.mapIndex === 1)!;
    expect([again.partitionKey, again.state, again.tryNumber]).toEqual(["2025-01-06", "success", 2]);

    // Without --json: the same exit code after the printed run.
    await writeFile(path.join(failDir, "2025-01-06-c"), "");
    const second = await launch(["--partition", "2025-01-06"]);
    await rm(path.join(failDir, "2025-01-06-c"));
    const plain = await runCli(["clear", "cm/parsed", "--run", second.id, "--map-index", "2", "--wait", ...globals()], {
      timeoutMs: 240_000,
    });
    expect(plain.code, plain.stderr + plain.stdout).toBe(0);
    expect(plain.stderr).toContain(`cleared mapped step 2 of "cm/parsed" partition "2025-01-06" in run ${second.id}`);
    expect(plain.stdout).toMatch(/success/);
  }, 600_000);

  it("refuses without --partition when the run fanned out several partitions, naming them, and changes nothing", async () => {
    await writeFile(path.join(failDir, "2025-01-07-a"), "");
    await writeFile(path.join(failDir, "2025-01-08-a"), "");
    const run = await launch(["--from", "2025-01-07", "--to", "2025-01-08"]);
    const r = await runCli(["clear", "cm/parsed", "--run", run.id, "--map-index", "0", "--json", ...globals()]);
    expect(r.code).toBe(1);
    const refused = JSON.parse(r.stdout) as { ok: boolean; error: { code: string; message: string } };
    expect(refused.error.message).toBe(
      `run ${run.id} has mapped step 0 of "cm/parsed" in 2 partitions: "2025-01-07", "2025-01-08"; choose one with --partition`,
    );
    const nowhere = await runCli(["clear", "cm/parsed", "--run", run.id, "--map-index", "7", ...globals()]);
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toContain(
      `no mapped step 7 of "cm/parsed" in run ${run.id}: its fan-outs are "2025-01-07" (map indices 0 to 2), "2025-01-08" (map indices 0 to 2)`,
    );

    const shown = await runCli(["run", run.id, "--json", ...globals()]);
    expect(shown.code, shown.stderr).toBe(0);
    const after = (JSON.parse(shown.stdout) as { run: RunJson }).run;
    expect(after.status).toBe("failed");
    expect(
      after.steps
        .filter((s) => s.mapIndex === 0)
        .map((s) => [s.partitionKey, s.tryNumber])
        .sort(),
    ).toEqual([
      ["2025-01-07", 1],
      ["2025-01-08", 1],
    ]);

    // Naming the partition clears that one. The run still holds the other partition's failed item, so it ends
    // failed; the command judges what it ran again, which succeeded.
    await rm(path.join(failDir, "2025-01-08-a"));
    const one = await runCli(
      ["clear", "cm/parsed", "--run", run.id, "--map-index", "0", "--partition", "2025-01-08", "--wait", ...globals()],
      { timeoutMs: 240_000 },
    );
    expect(one.code, one.stderr + one.stdout).toBe(0);
    expect(one.stderr).toContain(`the mapped step and the steps after it succeeded; run ${run.id} is still failed: 2 other step(s) failed`);
    const final = (JSON.parse((await runCli(["run", run.id, "--json", ...globals()])).stdout) as { run: RunJson }).run;
    expect(final.status).toBe("failed");
    const parsed = final.steps.filter((s) => s.assetKey === "cm/parsed");
    parsed.sort((a, b) => a.partitionKey.localeCompare(b.partitionKey) || a.mapIndex - b.mapIndex);
    expect(parsed.map((s) => [s.partitionKey, s.mapIndex, s.state, s.tryNumber])).toEqual([
      ["2025-01-07", -1, "upstream_failed", 1],
      ["2025-01-07", 0, "failed", 1],
      ["2025-01-07", 1, "success", 1],
      ["2025-01-07", 2, "success", 1],
      ["2025-01-08", -1, "success", 1],
      ["2025-01-08", 0, "success", 2],
      ["2025-01-08", 1, "success", 1],
      ["2025-01-08", 2, "success", 1],
    ]);
  }, 600_000);
});
