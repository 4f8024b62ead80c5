import { mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { PgTriggerStore } from "../../src/storage/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { resetDatabase } from "../support/reset.js";
import { deferredRun } from "../triggerer/deferred-run.js";
import { eventually, ROOT, runCli, startCli } from "./run-cli.js";
import { RUN_DECISIONS } from "../../src/planner/index.js";

const PARTNER = `
import { triggerKind } from "tributary";
export const partnerReady = triggerKind({
  kind: "partnerReady",
  async check(args) {
    return { fired: true, payload: { ...args, pid: process.pid } };
  },
});
`;

describePostgres("tributary triggerer", () => {
  const database = useTestDatabase();
  let work: string;
  const env = () => ({ DATABASE_URL: database.url });

  beforeAll(async () => {
    await mkdir(path.join(ROOT, "tmp"), { recursive: true });
    work = await mkdtemp(path.join(ROOT, "tmp", "triggerer-cli-"));
    await mkdir(path.join(work, "empty-defs"));
    await mkdir(path.join(work, "defs"));
    await mkdir(path.join(work, "files"));
    await writeFile(path.join(work, "defs", "partner.ts"), PARTNER);
  });
  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });
  beforeEach(async () => {
    await resetDatabase(database.db);
  });

  const counts = async (runId: string) => {
    const { rows } = await sql<{ state: string; n: number }>`
      select state, count(*)::int as n from steps where run_id = ${runId}::uuid group by state order by state`.execute(database.db);
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  };

  it("a triggerer SIGKILLed while holding 1 000 file triggers: another finishes them all once the leases lapse", async () => {
    const { runId, steps } = await deferredRun(database.db, 1000);
    const store = new PgTriggerStore(database.db, RUN_DECISIONS);
    const files = path.join(work, "files");
    await store.createTriggers(
      steps.map((stepId) => ({ kind: "fileExists", args: { path: path.join(files, "{partition}.csv") }, stepId, pollIntervalMs: 200 })),
      new Date(),
    );
    const args = ["triggerer", "--definitions", path.join(work, "empty-defs"), "--lease", "3s", "--concurrency", "1000"];
    const a = startCli(args, { env: env() });
    let b: ReturnType<typeof startCli> | undefined;
    try {
      // All 1 000 held by the first, checked and still waiting.
      const owner = await eventually(
        async () => {
          const { rows } = await sql<{ owner: string; n: number; checked: number }>`
          select lease_owner as owner, count(*)::int as n, count(*) filter (where attempts > 0)::int as checked
          from triggers where status = 'waiting' group by lease_owner`.execute(database.db);
          return rows.length === 1 && rows[0]!.owner !== null && rows[0]!.n === 1000 && rows[0]!.checked === 1000
            ? rows[0]!.owner
            : undefined;
        },
        60_000,
        () => `the first triggerer to hold every trigger\n${a.output()}`,
      );
      a.kill("SIGKILL");
      await new Promise((resolve) => a.once("close", resolve));

      // The files arrive after the kill (written, then renamed into place).
      for (let i = 1; i <= 1000; i++) {
        const key = `p${String(i).padStart(5, "0")}`;
        await writeFile(path.join(files, `${key}.tmp`), key);
        await rename(path.join(files, `${key}.tmp`), path.join(files, `${key}.csv`));
      }
      b = startCli(args, { env: env() });
      await eventually(
        async () => ((await counts(runId)).scheduled === 1000 ? true : undefined),
        60_000,
        () => `the second triggerer to fire all\n${b?.output()}`,
      );

      const { rows } = await sql<{ status: string; n: number }>`select status, count(*)::int as n from triggers group by status`.execute(
        database.db,
      );
      expect(rows).toEqual([{ status: "fired", n: 1000 }]);
      // None fired by the dead one: every payload has the file the second found.
      const { rows: payloads } = await sql<{ n: number }>`
        select count(*)::int as n from triggers where (payload->>'size')::int = 6`.execute(database.db);
      expect(payloads[0]!.n).toBe(1000);
      expect(owner).toMatch(/^triggerer-/);
    } finally {
      a.kill("SIGKILL");
      b?.kill("SIGTERM");
      if (b) await new Promise((resolve) => b!.once("close", resolve));
    }
  }, 180_000);

  it("runs a custom trigger kind from a definitions module in its child process, and gives its triggers back on SIGTERM", async () => {
    const { runId, steps } = await deferredRun(database.db, 2);
    const store = new PgTriggerStore(database.db, RUN_DECISIONS);
    const file = path.join(work, "files", "never-there");
    await store.createTriggers(
      [
        { kind: "partnerReady", args: { feed: "orders" }, stepId: steps[0]! },
        { kind: "fileExists", args: { path: file }, stepId: steps[1]!, pollIntervalMs: 60_000 },
      ],
      new Date(),
    );
    const cli = startCli(["triggerer", "--definitions", path.join(work, "defs")], { env: env() });
    try {
      await eventually(
        async () => ((await counts(runId)).scheduled === 1 ? true : undefined),
        60_000,
        () => `the custom trigger to fire\n${cli.output()}`,
      );
      expect(cli.output()).toContain("custom trigger kinds: partnerReady");
      const [fired] = await store.getTriggers([
        Number(
          (await database.db.selectFrom("steps").select("trigger_id").where("id", "=", steps[0]!).executeTakeFirstOrThrow()).trigger_id,
        ),
      ]);
      const payload = fired!.payload as { feed: string; pid: number };
      expect(payload.feed).toBe("orders");
      // Not the triggerer process: its child that imported the definitions.
      expect(payload.pid).not.toBe(cli.pid);
      await eventually(
        async () => {
          const { rows } = await sql<{ n: number }>`select count(*)::int as n from triggers where lease_owner is not null`.execute(
            database.db,
          );
          return rows[0]!.n === 1 ? true : undefined;
        },
        30_000,
        "the file trigger to be held",
      );
    } finally {
      cli.kill("SIGTERM");
    }
    const code = await new Promise((resolve) => cli.once("close", resolve));
    expect(code).toBe(0);
    expect(cli.output()).toContain("SIGTERM: giving back held triggers");
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from triggers where lease_owner is not null`.execute(database.db);
    expect(rows[0]!.n).toBe(0);
  }, 120_000);

  it("an in-process `materialize` checks its own deferred steps: the run finishes once the file appears", async () => {
    const defs = path.join(work, "waiting-defs");
    const files = path.join(work, "waiting-files");
    await mkdir(defs, { recursive: true });
    await mkdir(files, { recursive: true });
    await writeFile(
      path.join(defs, "w.ts"),
      `import { asset, daily, fileExists } from "tributary";
export const waits = asset({ key: "w/waits", partitions: daily({ start: "2025-03-01" }) }, async (ctx) =>
  ctx.defer(fileExists(${JSON.stringify(files)} + "/{partition}.csv"), { interval: "200ms", timeout: "2m" }));`,
    );
    const dataDir = path.join(work, "waiting-data");
    const running = runCli(
      [
        "materialize",
        "w/waits",
        "--partition",
        "2025-03-01",
        "--wait",
        "--json",
        "--data-dir",
        dataDir,
        "--definitions",
        defs,
        "--url",
        "http://127.0.0.1:9",
      ],
      {
        env: { DATABASE_URL: "" },
        timeoutMs: 90_000,
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    await writeFile(path.join(files, "2025-03-01.csv"), "a,b\n");
    const result = await running;
    expect(result.code, result.stderr).toBe(0);
    const out = JSON.parse(result.stdout) as { run: { status: string; steps: { state: string; tries: { state: string }[] }[] } };
    expect(out.run.status).toBe("success");
    expect(out.run.steps[0]!.tries.map((t) => t.state)).toEqual(["deferred", "success"]);
  });

  it("an in-process `materialize` checks a custom trigger kind that another file exports, in a child importing that file", async () => {
    const defs = path.join(work, "custom-kind-defs");
    await mkdir(defs, { recursive: true });
    await writeFile(path.join(defs, "partner.ts"), PARTNER);
    await writeFile(
      path.join(defs, "w.ts"),
      `import { asset } from "tributary";
import { partnerReady } from "./partner.js";
export const waits = asset({ key: "w/partner" }, async (ctx) => ctx.defer(partnerReady({ feed: "orders" }), { interval: "200ms", timeout: "2m" }));`,
    );
    const result = await runCli(["materialize", "w/partner", "--wait", "--json", "--definitions", defs, "--url", "http://127.0.0.1:9"], {
      env: { DATABASE_URL: database.url },
      timeoutMs: 90_000,
    });
    expect(result.code, result.stderr).toBe(0);
    const out = JSON.parse(result.stdout) as { run: { status: string; steps: { tries: { state: string }[] }[] } };
    expect(out.run.status).toBe("success");
    expect(out.run.steps[0]!.tries.map((t) => t.state)).toEqual(["deferred", "success"]);
  });
});
