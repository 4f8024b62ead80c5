// Tributary's own processes dying: one of two reconcilers killed mid-burst, the triggerer killed while it holds
// every trigger. Every run ends `success` with the default `retries: 0`.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describePostgres } from "../support/pg.js";
import { Fleet, PARTITIONS, report, TRIGGERS } from "./fleet.js";

describePostgres("faults: reconcilers and the triggerer", () => {
  let fleet: Fleet;
  beforeAll(async () => {
    fleet = await Fleet.start();
  });
  afterAll(async () => {
    await fleet?.stop();
  });

  it("one of two reconcilers killed mid-burst: the other finishes its steps, transactional ones committed once", async () => {
    const [run] = await fleet.underFault({
      scenario: "one of two reconcilers killed",
      launch: { assetKeys: ["f/local", "f/tx"], allPartitions: true },
      underWay: 4,
      progressOf: "f/local",
      fault: () => fleet.kill("reconciler-1"),
    });
    expect(await fleet.committed([run!])).toBe(PARTITIONS);
    await fleet.startProc("reconciler-1");
  });

  it(`the triggerer killed holding ${TRIGGERS} triggers: its successor takes them over once their lease ends`, async () => {
    const runs = [await fleet.launch({ assetKeys: ["f/landing"], allPartitions: true })];
    await fleet.until(async () => {
      const rows = await fleet.pg.query<{ n: number }>(
        "select count(*)::int as n from triggers where status = 'waiting' and lease_owner is not null",
        [],
        "tributary",
      );
      return rows[0]!.n === TRIGGERS;
    }, `the triggerer to hold ${TRIGGERS} triggers`);
    const started = Date.now();
    await fleet.kill("triggerer");
    // The data arrives while no triggerer runs.
    await Promise.all(
      Array.from({ length: TRIGGERS }, (_, i) => writeFile(path.join(fleet.landingDir, `t${String(i).padStart(4, "0")}.csv`), "x")),
    );
    await fleet.startProc("triggerer");
    const ended = Date.now();
    const progressAfterS = await fleet.progressAfter(ended, "f/landing");
    const succeeded = await fleet.waitForRuns(runs);
    report({
      scenario: `triggerer killed holding ${TRIGGERS} triggers`,
      runsSucceeded: succeeded,
      runs: runs.length,
      stepsRunTwice: await fleet.stepsRunTwice(runs),
      progressAfterS,
      faultS: (ended - started) / 1000,
    });
    expect(succeeded, await fleet.failures(runs)).toBe(runs.length);
    expect(await fleet.stepsRunTwice(runs)).toBe(0);
  });
});
