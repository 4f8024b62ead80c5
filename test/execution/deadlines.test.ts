import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { hourly, multiPartitions, partitionSpace, staticPartitions } from "../../src/partitions/index.js";
import { AlertsTask, DeadlineMonitor, parseAlertsConfig, type AlertsConfig } from "../../src/reconciler/index.js";
import { deadlineCursorName, PgAlertStore } from "../../src/storage/index.js";
import { describePostgres } from "../support/pg.js";
import { WebhookReceiver } from "../support/webhook-receiver.js";
import { Harness, sleep } from "./harness.js";

const DEFS = `
import { asset, daily, hourly, multiPartitions, staticPartitions } from "tributary";
const hours = hourly({ start: "2025-01-01" });
export const feed = asset({ key: "d/feed", partitions: hours, deadline: "3h", owner: "team:sales" }, async () => 1);
export const regional = asset(
  { key: "d/regional", partitions: multiPartitions({ hour: hours, region: staticPartitions(["eu", "us"]) }), deadline: "3h" },
  async () => 1,
);
// Ignored: no window to measure a deadline from, or no deadline.
export const plain = asset({ key: "d/plain", deadline: "1m" }, async () => 1);
export const free = asset({ key: "d/free", partitions: daily({ start: "2025-01-01" }) }, async () => 1);
`;

const HOUR = 3_600_000;
const DEADLINE = 3 * HOUR;
const hours = partitionSpace(hourly({ start: "2025-01-01" }));
const regional = partitionSpace(multiPartitions({ hour: hourly({ start: "2025-01-01" }), region: staticPartitions(["eu", "us"]) }));

/** Hourly keys whose window ended in (from, to]. */
function windowsEndingIn(from: number, to: number): string[] {
  const lo = hours.count(new Date(from));
  const hi = hours.count(new Date(to));
  const out: string[] = [];
  for (let i = lo; i < hi; i++) out.push(hours.keyAt(i));
  return out;
}

describePostgres("alerts: partition deadlines", () => {
  let h: Harness;
  let receiver: WebhookReceiver;
  const tasks: AlertsTask[] = [];
  let config: AlertsConfig | undefined;

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
    config = parseAlertsConfig(
      JSON.stringify({ sinks: { hook: { type: "webhook", url: receiver.url() } }, default: ["hook"] }),
      "deadlines.json",
    );
    h = await Harness.create({
      files: { "defs.ts": DEFS },
      nodes: 2,
      tasks: (s) => {
        const task = new AlertsTask({
          store: new PgAlertStore(s.handle.db),
          graphs: s.graphs,
          definitions: s.definitions,
          config: config!,
          clock: s.clock,
          intervalMs: 0,
        });
        tasks.push(task);
        return [task];
      },
    });
  });
  afterAll(async () => {
    for (const t of tasks) await t.stop();
    await h?.stop();
    await receiver?.close();
  });

  const cursor = async (assetKey: string): Promise<number | undefined> => {
    const { rows } = await sql<{
      value: { until: string };
    }>`select value from cursors where name = ${deadlineCursorName(assetKey)}`.execute(h.db);
    return rows[0] ? Date.parse(rows[0].value.until) : undefined;
  };
  const alerts = async () =>
    (
      await sql<{ asset_key: string; partition_key: string; owner: string | null; status: string; payload: Record<string, unknown> }>`
        select asset_key, partition_key, owner, status, payload from alerts where kind = 'deadline_missed' order by asset_key, partition_key`.execute(
        h.db,
      )
    ).rows;

  it("alerts once per partition not materialised by its deadline, none for one materialised in time, nothing before first sight", async () => {
    // First sight: the cursors start at now; a year of past windows is not judged.
    const t0 = await h.until(async () => cursor("d/feed"), 10_000, "the first deadline check");
    const t0Regional = await h.until(async () => cursor("d/regional"), 10_000, "the first deadline check of d/regional");
    expect(await cursor("d/plain")).toBeUndefined();
    expect(await cursor("d/free")).toBeUndefined();
    await sleep(300);
    expect(await alerts()).toEqual([]);

    // The windows whose deadline passes in the next three (shifted) hours: one of each asset is materialised in time.
    const upcoming = windowsEndingIn(t0 - DEADLINE, t0);
    expect(upcoming.length).toBeGreaterThanOrEqual(3);
    const onTime = upcoming[1]!;
    const runs = [await h.launch(["d/feed"], { partition: onTime }), await h.launch(["d/regional"], { partition: `${onTime}|eu` })];
    for (const r of await h.waitForRuns(runs)) expect(r.status).toBe("success");

    h.clockShiftMs = DEADLINE;
    await h.until(async () => ((await cursor("d/feed"))! >= t0 + DEADLINE ? true : undefined), 10_000, "a check three hours later");
    await h.until(async () => ((await cursor("d/regional"))! >= t0Regional + DEADLINE ? true : undefined), 10_000, "d/regional checked");
    await sleep(300);
    // Stop checking, so what was checked (the cursors) and what was alerted can be compared;
    // one last pass of a fresh task sends whatever the last passes recorded.
    for (const n of h.nodes) await n.reconciler.stop();
    for (const t of tasks) await t.stop();
    const flush = new AlertsTask({ store: new PgAlertStore(h.db), graphs: h.graphs, definitions: h.definitions, config: config! });
    await flush.run(new Date(Date.now() + h.clockShiftMs));
    await flush.stop();

    const feedUntil = (await cursor("d/feed"))!;
    const regionalUntil = (await cursor("d/regional"))!;
    const expectedFeed = windowsEndingIn(t0 - DEADLINE, feedUntil - DEADLINE).filter((k) => k !== onTime);
    const expectedRegional = windowsEndingIn(t0Regional - DEADLINE, regionalUntil - DEADLINE)
      .flatMap((k) => [`${k}|eu`, `${k}|us`])
      .filter((k) => k !== `${onTime}|eu`);
    expect(expectedFeed.length).toBeGreaterThanOrEqual(2);
    expect(expectedRegional).toContain(`${onTime}|us`);
    const rows = await alerts();
    expect(rows.filter((r) => r.asset_key === "d/feed").map((r) => r.partition_key)).toEqual([...expectedFeed].sort());
    expect(rows.filter((r) => r.asset_key === "d/regional").map((r) => r.partition_key)).toEqual([...expectedRegional].sort());
    for (const k of expectedRegional) expect(regional.has(k)).toBe(true);
    const feedAlert = rows.find((r) => r.asset_key === "d/feed")!;
    expect(feedAlert.owner).toBe("team:sales");
    expect(feedAlert.payload).toMatchObject({ asset: "d/feed", deadlineMs: DEADLINE });
    const w = hours.window(feedAlert.partition_key)!;
    expect(feedAlert.payload["windowEnd"]).toBe(w.end.toISOString());
    expect(feedAlert.payload["deadlineAt"]).toBe(new Date(w.end.getTime() + DEADLINE).toISOString());

    // Each sent once, over two reconcilers.
    const total = expectedFeed.length + expectedRegional.length;
    expect(rows.every((r) => r.status === "sent")).toBe(true);
    const delivered = receiver.requests.map((r) => (r.body as { alert: { causeKey: string } }).alert.causeKey);
    expect(delivered).toHaveLength(total);
    expect(new Set(delivered).size).toBe(total);
    expect(delivered).not.toContain(`deadline:d/feed:${onTime}`);
    expect(h.errors()).toEqual([]);
  });

  it("a cursor far behind catches up over bounded checks, whole windows at a time", async () => {
    const setCursor = (key: string, until: string) =>
      sql`insert into cursors (name, value) values (${deadlineCursorName(key)}, ${JSON.stringify({ until })}::jsonb)
          on conflict (name) do update set value = excluded.value`.execute(h.db);
    const now = new Date("2025-02-01T00:00:00Z");
    await setCursor("d/feed", "2025-01-20T00:00:00.000Z");
    await setCursor("d/regional", now.toISOString());
    const monitor = new DeadlineMonitor({
      store: new PgAlertStore(h.db),
      graphs: h.graphs,
      definitions: h.definitions,
      maxPartitionsPerCheck: 100,
    });
    const old = async () =>
      (
        await sql<{
          n: number;
        }>`select count(*)::int as n from alerts where asset_key = 'd/feed' and partition_key like '2025-01-%'`.execute(h.db)
      ).rows[0]!.n;

    // Windows ending in (Jan 19 21:00, Jan 31 21:00]: 288 hours, at most 100 per check.
    expect(await monitor.check(now)).toBe(100);
    const first = hours.keyAt(hours.count(new Date("2025-01-19T21:00:00Z")));
    expect(first).toBe("2025-01-19-21:00"); // the first window ending after 21:00
    const hundredth = hours.window(hours.keyAt(hours.indexOf(first) + 99))!;
    expect(await cursor("d/feed")).toBe(hundredth.end.getTime() + DEADLINE);
    expect(await monitor.check(now)).toBe(100);
    expect(await monitor.check(now)).toBe(88);
    expect(await cursor("d/feed")).toBe(now.getTime());
    expect(await monitor.check(now)).toBe(0);
    expect(await old()).toBe(288);
    // The clock going back changes nothing: cursors never move backwards.
    expect(await monitor.check(new Date("2025-01-25T00:00:00Z"))).toBe(0);
    expect(await cursor("d/feed")).toBe(now.getTime());
  });
});
