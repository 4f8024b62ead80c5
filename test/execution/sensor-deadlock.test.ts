import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { PgTriggerStore } from "../../src/storage/index.js";
import { Triggerer } from "../../src/triggerer/index.js";
import { builtInTriggers, pgMaterializedLookup } from "../../src/trigger-checks/index.js";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";
import { RUN_DECISIONS } from "../../src/planner/index.js";

// The seed's poke deadlock: every worker slot is held by sensors poking for
// data whose producer cannot start because there is no free slot. In poke
// mode the sensors can only time out; in deferrable mode they give their
// slots back, the producer runs, and the sensors resume.

const defs = (mode: "poke" | "deferrable") => `
import { asset, assetMaterialized, daily } from "tributary";
const days = daily({ start: "2025-03-01" });
export const producer = asset({ key: "k/producer", partitions: days }, async (ctx) => ctx.partition.key);
export const sensor = asset({ key: "k/sensor", partitions: days }, async (ctx) =>
  ctx.waitFor(assetMaterialized("k/producer"), { mode: ${JSON.stringify(mode)}, interval: "200ms", timeout: "4s" }));
`;

interface StepTimes {
  asset_key: string;
  state: string;
  first_start: Date | null;
  last_end: Date | null;
}

async function times(h: Harness, runIds: string[]): Promise<StepTimes[]> {
  const { rows } = await sql<StepTimes>`
    select s.asset_key, s.state, min(t.started_at) as first_start, max(t.ended_at) as last_end
    from steps s left join step_tries t on t.step_id = s.id
    where s.run_id = any(${runIds}::uuid[]) group by s.id, s.asset_key, s.state order by s.id`.execute(h.db);
  return rows;
}

describePostgres("execution: sensors holding every slot", () => {
  let h: Harness | undefined;
  let triggerer: Triggerer | undefined;
  afterEach(async () => {
    await triggerer?.stop();
    triggerer = undefined;
    await h?.stop();
    h = undefined;
  });

  it("poke mode: sensors holding both slots starve their producer until they time out", async () => {
    h = await Harness.create({ files: { "k.ts": defs("poke") }, node: { capacity: 2 } });
    const sensors = await h.launch(["k/sensor"], { from: "2025-03-01", to: "2025-03-02" });
    // The deadlock: both slots held by poking sensors before the producer asks for one.
    await h.until(
      async () => (await times(h!, [sensors])).filter((s) => s.state === "running").length === 2,
      60_000,
      "both sensors to hold a slot",
    );
    const producers = await h.launch(["k/producer"], { from: "2025-03-01", to: "2025-03-02" });
    const [sensorRun, producerRun] = await h.waitForRuns([sensors, producers], 60_000);
    expect(sensorRun!.status).toBe("failed");
    // Every sensor times out, except that the second, started later on a loaded machine, may see its partition's
    // producer finish in the slot the first gave up before its own timeout comes.
    const timedOut = sensorRun!.steps.filter((s) => (s.error as { code?: string } | null)?.code === "TRIGGER_TIMED_OUT");
    expect(timedOut.length).toBeGreaterThanOrEqual(1);
    for (const s of sensorRun!.steps) if (!timedOut.includes(s)) expect(s.state).toBe("success");
    expect(producerRun!.status).toBe("success");
    const all = await times(h, [sensors, producers]);
    const sensorSteps = all.filter((s) => s.asset_key === "k/sensor").sort((a, b) => a.last_end!.getTime() - b.last_end!.getTime());
    // The first to end gave up: nothing could have produced its data while both slots were held.
    expect(sensorSteps[0]!.state).toBe("failed");
    // The first slot freed is the first sensor's, when it gave up: the producer could not start before (the second
    // sensor, started later on a loaded machine, may still be poking when it does).
    const firstSensorEnded = Math.min(...all.filter((s) => s.asset_key === "k/sensor").map((s) => s.last_end!.getTime()));
    const producerStarted = Math.min(...all.filter((s) => s.asset_key === "k/producer").map((s) => s.first_start!.getTime()));
    expect(producerStarted).toBeGreaterThanOrEqual(firstSensorEnded - 50);
  });

  it("deferrable mode: the same sensors free their slots, the producer runs, and the sensors finish", async () => {
    h = await Harness.create({ files: { "k.ts": defs("deferrable") }, node: { capacity: 2 } });
    triggerer = new Triggerer({
      store: new PgTriggerStore(h.db, RUN_DECISIONS),
      registry: builtInTriggers({ materialized: pgMaterializedLookup(h.db) }),
      listen: (channel, handler) => h!.handle.listen(channel, handler),
    });
    await triggerer.start();
    const sensors = await h.launch(["k/sensor"], { from: "2025-03-01", to: "2025-03-02" });
    const producers = await h.launch(["k/producer"], { from: "2025-03-01", to: "2025-03-02" });
    const [sensorRun, producerRun] = await h.waitForRuns([sensors, producers], 30_000);
    expect(producerRun!.status).toBe("success");
    expect(sensorRun!.status).toBe("success");
    for (const s of sensorRun!.steps) expect(s.tries.map((t) => t.state)).toEqual(["deferred", "success"]);
    const { rows } = await sql<{ inline_value: { assetKey: string; partition: string } }>`
      select inline_value from outputs where run_id = ${sensors} order by partition_key`.execute(h.db);
    expect(rows.map((r) => r.inline_value.partition)).toEqual(["2025-03-01", "2025-03-02"]);
  });
});
