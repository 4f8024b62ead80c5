import { access } from "node:fs/promises";
import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

const DEFS = `
import { asset, daily, dep, timeWindow } from "tributary";
const days = daily({ start: "2025-01-01" });

export const a = asset({ key: "chain/a", partitions: days }, async (ctx) => {
  ctx.log.info("a runs " + ctx.partition.key);
  return { day: ctx.partition.key, n: Number(ctx.partition.key.slice(-2)) };
});

export const b = asset({ key: "chain/b", partitions: days, deps: { a } }, async (ctx, { a }) => {
  ctx.log.info("b runs " + ctx.partition.key);
  if (a.day !== ctx.partition.key) throw new Error("b read the wrong partition of a: " + a.day);
  return { day: a.day, n: a.n * 10, window: ctx.partition.window.start.toISOString() };
});

export const c = asset(
  { key: "chain/c", partitions: days, deps: { b: dep(b, timeWindow({ startOffset: -2 })) } },
  async (ctx, { b }) => {
    ctx.log.info("c runs " + ctx.partition.key);
    if (!Array.isArray(b)) throw new Error("c expected an array, got " + typeof b);
    return { days: b.map((x) => x.day), sum: b.reduce((s, x) => s + x.n, 0) };
  },
);
`;

describePostgres("execution: data flow through a daily chain", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it("runs A→B→C over 5 partitions in dependency order, passing typed outputs, with lineage and try records", async () => {
    h = await Harness.create({ files: { "chain.ts": DEFS } });
    // c's window reaches two days back: the first two days of b come from an earlier run.
    const first = await h.waitForRun(await h.launch(["chain/a", "chain/b"], { from: "2025-01-01", to: "2025-01-02" }));
    expect(first.status).toBe("success");
    const runId = await h.launch(["chain/a", "chain/b", "chain/c"], { from: "2025-01-03", to: "2025-01-07" });
    const run = await h.waitForRun(runId);
    expect(run.status).toBe("success");
    expect(run.steps).toHaveLength(15);
    expect(run.steps.every((s) => s.state === "success")).toBe(true);
    expect(run).toMatchObject({ stepsTotal: 15, stepsDone: 15, stepsFailed: 0, stepsActive: 0 });

    // Dependency order: each step started after every upstream step ended.
    const byId = new Map(run.steps.map((s) => [s.id, s]));
    for (const s of run.steps) {
      for (const up of s.upstream) {
        expect(s.tries[0]!.startedAt!.getTime()).toBeGreaterThanOrEqual(byId.get(up)!.tries[0]!.endedAt!.getTime());
      }
    }
    // c@2025-01-05 waits on b for 01-03..01-05; c@2025-01-03 only on b@01-03 (the rest is materialised).
    const stepOf = (asset: string, key: string) => run.steps.find((s) => s.assetKey === asset && s.partitionKey === key)!;
    expect(stepOf("chain/c", "2025-01-05").upstream.map((id) => byId.get(id)!.partitionKey)).toEqual([
      "2025-01-03",
      "2025-01-04",
      "2025-01-05",
    ]);
    expect(stepOf("chain/c", "2025-01-03").upstream.map((id) => byId.get(id)!.partitionKey)).toEqual(["2025-01-03"]);

    // Outputs: typed values flowed downstream; the time window arrived as an array in partition order.
    const outputs = await sql<{ asset_key: string; partition_key: string; inline_value: unknown }>`
      select asset_key, partition_key, inline_value from outputs where run_id = ${runId} order by asset_key, partition_key`.execute(h.db);
    const out = (asset: string, key: string) => outputs.rows.find((o) => o.asset_key === asset && o.partition_key === key)?.inline_value;
    expect(out("chain/b", "2025-01-04")).toEqual({ day: "2025-01-04", n: 40, window: "2025-01-04T00:00:00.000Z" });
    expect(out("chain/c", "2025-01-03")).toEqual({ days: ["2025-01-01", "2025-01-02", "2025-01-03"], sum: 60 });
    expect(out("chain/c", "2025-01-07")).toEqual({ days: ["2025-01-05", "2025-01-06", "2025-01-07"], sum: 180 });

    // Lineage: every materialisation of c links to the events of the b partitions it read.
    const lineage = await sql<{ asset_key: string; partition_key: string; up_asset: string; up_partition: string; linked: boolean }>`
      select e.asset_key, e.partition_key, i.upstream_asset_key as up_asset, i.upstream_partition_key as up_partition,
             (u.asset_key = i.upstream_asset_key and u.partition_key = i.upstream_partition_key and u.kind = 'materialization') as linked
      from events e join event_inputs i on i.event_id = e.id left join events u on u.id = i.upstream_event_id
      where e.run_id = ${runId} order by 1, 2, 4`.execute(h.db);
    expect(lineage.rows.every((r) => r.linked)).toBe(true);
    expect(lineage.rows.filter((r) => r.asset_key === "chain/c" && r.partition_key === "2025-01-04").map((r) => r.up_partition)).toEqual([
      "2025-01-02",
      "2025-01-03",
      "2025-01-04",
    ]);
    expect(lineage.rows.filter((r) => r.asset_key === "chain/b").map((r) => [r.partition_key, r.up_asset, r.up_partition])).toEqual(
      ["03", "04", "05", "06", "07"].map((d) => [`2025-01-${d}`, "chain/a", `2025-01-${d}`]),
    );
    // c@01-03 read b@01-01 as materialised by the first run.
    const fromFirst = await sql<{ run_id: string }>`
      select u.run_id from events e join event_inputs i on i.event_id = e.id join events u on u.id = i.upstream_event_id
      where e.run_id = ${runId} and e.asset_key = 'chain/c' and e.partition_key = '2025-01-03' and i.upstream_partition_key = '2025-01-01'`.execute(
      h.db,
    );
    expect(fromFirst.rows).toEqual([{ run_id: first.id }]);
    expect(lineage.rows.filter((r) => r.asset_key === "chain/a")).toEqual([]);
    const events = await sql<{
      n: number;
    }>`select count(*)::int as n from events where run_id = ${runId} and kind = 'materialization'`.execute(h.db);
    expect(events.rows[0]!.n).toBe(15);

    // Partition status.
    const status = await sql<{ asset_key: string; status: string; n: number }>`
      select asset_key, status, count(*)::int as n from partition_status group by 1, 2 order by 1`.execute(h.db);
    expect(status.rows).toEqual([
      { asset_key: "chain/a", status: "materialized", n: 7 },
      { asset_key: "chain/b", status: "materialized", n: 7 },
      { asset_key: "chain/c", status: "materialized", n: 5 },
    ]);

    // Every try: who ran it, when, how long, its log.
    const tries = await sql<{
      state: string;
      worker_id: string | null;
      hostname: string | null;
      pid: number | null;
      queued_at: Date | null;
      started_at: Date | null;
      ended_at: Date | null;
      duration_ms: number | null;
      log_ref: string | null;
    }>`select state, worker_id, hostname, pid, queued_at, started_at, ended_at, duration_ms, log_ref from step_tries where run_id = ${runId}`.execute(
      h.db,
    );
    expect(tries.rows).toHaveLength(15);
    for (const t of tries.rows) {
      expect(t.state).toBe("success");
      expect(t.worker_id).toMatch(/^in-process:/);
      expect(t.hostname).toBeTruthy();
      expect(t.pid).toBe(process.pid);
      expect(t.queued_at!.getTime()).toBeLessThanOrEqual(t.started_at!.getTime());
      expect(t.started_at!.getTime()).toBeLessThanOrEqual(t.ended_at!.getTime());
      expect(Number(t.duration_ms)).toBeGreaterThanOrEqual(0);
      expect(t.log_ref).toMatch(new RegExp(`${runId}/\\d+-1\\.log$`));
      await access(t.log_ref!);
    }
  });

  it("runs the same chain on the local executor (real worker processes)", async () => {
    h = await Harness.create({ files: { "chain.ts": DEFS }, executor: "local", node: { capacity: 4 } });
    await h.waitForRun(await h.launch(["chain/a", "chain/b"], { from: "2025-01-01", to: "2025-01-02" }), 60_000);
    const runId = await h.launch(["chain/a", "chain/b", "chain/c"], { from: "2025-01-03", to: "2025-01-05" });
    const run = await h.waitForRun(runId, 60_000);
    expect(run.status).toBe("success");
    const c5 = await sql<{ inline_value: unknown; pid: number; worker_id: string }>`
      select o.inline_value, t.pid, t.worker_id from outputs o join step_tries t on t.step_id = o.step_id
      where o.run_id = ${runId} and o.asset_key = 'chain/c' and o.partition_key = '2025-01-05'`.execute(h.db);
    expect(c5.rows[0]!.inline_value).toEqual({ days: ["2025-01-03", "2025-01-04", "2025-01-05"], sum: 120 });
    expect(c5.rows[0]!.pid).not.toBe(process.pid);
    expect(c5.rows[0]!.worker_id).toMatch(/^local:/);
  });
});
