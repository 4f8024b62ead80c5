// Postgres going away under a running deployment: restarted, every session killed, and a stranger's transaction
// held open in another database of the cluster. Every run ends `success` with the default `retries: 0`.
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { freePort, startCli } from "../cli/run-cli.js";
import { describePostgres } from "../support/pg.js";
import { FAULT_MS, Fleet, PARTITIONS, report } from "./fleet.js";

describePostgres("faults: the database", () => {
  let fleet: Fleet;
  beforeAll(async () => {
    fleet = await Fleet.start();
  });
  afterAll(async () => {
    await fleet?.stop();
  });

  /** A run of local, fleet and transactional steps under way when `fault` strikes, and one launched right after it. */
  async function underFault(scenario: string, fault: () => Promise<void>): Promise<void> {
    const [run] = await fleet.underFault({
      scenario,
      launch: { assetKeys: ["f/local", "f/fleet", "f/tx"], allPartitions: true },
      underWay: 4,
      fault: async () => {
        await fault();
        return [await fleet.launch({ assetKeys: ["f/local"], partition: "p00" })];
      },
    });
    expect(fleet.exited()).toEqual([]);
    // Every transactional step's writes committed, each exactly once; their code may have run again (a try whose
    // connection went away rolled back), the other steps' did not.
    expect(await fleet.committed([run!])).toBe(PARTITIONS);
    expect(await fleet.stepsRunTwice([run!], ["f/tx"])).toBe(0);
  }

  it("Postgres restarted mid-run: every process stays up, reconnects and finishes the runs", async () => {
    await underFault("postgres restart", () => fleet.pg.restart());
    // Said once per outage, not per attempt.
    for (const name of ["reconciler-1", "reconciler-2", "triggerer"]) {
      expect(fleet.output(name)).toMatch(/postgres is unreachable/);
      expect(fleet.output(name)).toMatch(/postgres answers again after/);
    }
  });

  it("Postgres failed over to a promoted standby at the same address, read-only for a while first: the same", async () => {
    await underFault("postgres failover", () => fleet.pg.failover({ readOnlyMs: FAULT_MS.readOnly }));
    for (const name of ["reconciler-1", "reconciler-2", "triggerer"]) {
      expect(fleet.output(name)).toMatch(/postgres is unreachable/);
      expect(fleet.output(name)).toMatch(/postgres answers again after/);
    }
  });

  it("every Postgres session killed mid-run: the same", async () => {
    await underFault("all sessions killed", async () => {
      expect(await fleet.pg.terminateSessions()).toBeGreaterThan(0);
    });
  });

  it(
    "tributary dev on Postgres started before its database, and a definitions change made while it is away: both wait for it",
    { timeout: 600_000 },
    async () => {
      // A database of its own on the cluster, so its definitions do not mix with the fleet's.
      await fleet.pg.query("create database dev_outage");
      const defs = path.join(fleet.dir, "dev-defs");
      await mkdir(defs);
      await writeFile(
        path.join(defs, "first.ts"),
        `import { asset } from "tributary";\nexport const first = asset({ key: "d/first" }, async () => 1);\n`,
      );
      await fleet.pg.stop();
      const port = freePort();
      const dev = startCli(
        ["dev", "--port", String(port), "--definitions", defs, "--data-dir", path.join(fleet.dir, "dev-data"), "--processes", "1"],
        {
          env: { DATABASE_URL: fleet.pg.url("dev_outage"), NO_COLOR: "1" },
        },
      );
      const storedKeys = async () =>
        (await fleet.pg.query<{ key: string }>("select key from assets order by key", [], "dev_outage").catch(() => [])).map((r) => r.key);
      try {
        await fleet.until(
          async () => /postgres is unreachable/.test(dev.output()),
          () => `dev to say its database is away:\n${dev.output()}`,
        );
        expect(dev.exitCode).toBeNull();
        await fleet.pg.start();
        await fleet.until(
          async () => /definitions loaded: 1 assets/.test(dev.output()),
          () => `dev to load its definitions:\n${dev.output()}`,
        );
        expect(await storedKeys()).toEqual(["d/first"]);

        // The database goes away again; a file changes meanwhile; its load is stored once the database is back.
        await fleet.pg.stop();
        await writeFile(
          path.join(defs, "second.ts"),
          `import { asset } from "tributary";\nexport const second = asset({ key: "d/second" }, async () => 2);\n`,
        );
        await new Promise((r) => setTimeout(r, 3_000));
        await fleet.pg.start();
        await fleet.until(
          async () => (await storedKeys()).includes("d/second"),
          () => `dev to store the changed definitions:\n${dev.output()}`,
        );
        expect(dev.exitCode).toBeNull();
      } finally {
        dev.kill("SIGINT");
        await new Promise((r) => (dev.exitCode !== null ? r(null) : dev.once("exit", r)));
      }
      expect(fleet.exited()).toEqual([]);
    },
  );

  it("the object store unreachable: the steps that could not save their output run again once it is back", async () => {
    const runs = await fleet.underFault({
      scenario: "object store unreachable",
      launch: { assetKeys: ["f/big"], allPartitions: true },
      underWay: 2,
      progressOf: "f/big",
      fault: async () => {
        await fleet.objects.stop();
        await new Promise((r) => setTimeout(r, FAULT_MS.objectStoreDown));
        await fleet.objects.start();
      },
    });
    const failed = await fleet.pg.query<{ code: string; failure_class: string }>(
      "select distinct t.error->>'code' as code, t.failure_class from step_tries t where t.run_id = $1::uuid and t.state = 'failed'",
      [runs[0]],
      "tributary",
    );
    expect(
      failed.every((f) => f.failure_class === "infrastructure"),
      JSON.stringify(failed),
    ).toBe(true);
  });

  it(
    "a transaction held open in another database does not hold back dataset-driven automation",
    async () => {
      await fleet.pg.query("create database analyst");
      const stranger = new pg.Client({ connectionString: fleet.pg.url("analyst") });
      stranger.on("error", () => undefined); // the cluster goes away with the suite
      await stranger.connect();
      const runs: string[] = [];
      /** f/total materialised: seconds until automation starts f/downstream from its event. */
      const reaction = async (): Promise<number> => {
        const run = await fleet.launch({ assetKeys: ["f/local", "f/total"], allPartitions: true });
        runs.push(run);
        expect(await fleet.waitForRuns([run])).toBe(1);
        const materialisedAt = new Date();
        const downstream = await fleet.until(async () => {
          const rows = await fleet.pg.query<{ id: string }>(
            `select r.id::text from runs r join steps s on s.run_id = r.id
             where s.asset_key = 'f/downstream' and r.created_at > $1 order by r.created_at limit 1`,
            [new Date(materialisedAt.getTime() - 2_000)],
            "tributary",
          );
          return rows.find((r) => !runs.includes(r.id))?.id;
        }, "automation to start f/downstream while the transaction is open");
        runs.push(downstream);
        const seconds = (Date.now() - materialisedAt.getTime()) / 1000;
        expect(await fleet.waitForRuns([downstream])).toBe(1);
        return seconds;
      };
      try {
        await stranger.query("begin");
        await stranger.query("select pg_current_xact_id()");
        const opened = Date.now();
        const reactions = [await reaction()];
        // Held for as long as the scenario says (the full suite: ten minutes); automation keeps reacting meanwhile.
        while (Date.now() < opened + FAULT_MS.openTransaction) {
          await new Promise((r) => setTimeout(r, Math.min(30_000, Math.max(0, opened + FAULT_MS.openTransaction - Date.now()))));
          reactions.push(await reaction());
        }
        // Still open: the events reached automation past it.
        expect((await stranger.query("select 1 as open")).rows).toEqual([{ open: 1 }]);
        report({
          scenario: "transaction open in another database",
          runsSucceeded: await fleet.waitForRuns(runs),
          runs: runs.length,
          stepsRunTwice: await fleet.stepsRunTwice(runs),
          progressAfterS: Math.max(...reactions),
          faultS: (Date.now() - opened) / 1000,
        });
      } finally {
        await stranger.query("rollback").catch(() => undefined);
        await stranger.end();
      }
    },
    FAULT_MS.openTransaction + 300_000,
  );
});
