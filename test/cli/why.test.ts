import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AutomationTask } from "../../src/reconciler/index.js";
import { PgAutomationStore, PgEventStore, PgPauseStore } from "../../src/storage/index.js";
import { Harness } from "../execution/harness.js";
import { commandStore, describePostgres, type CommandStore } from "../support/pg.js";
import { eventually, runCli, startDev, type DevServer } from "./run-cli.js";

// `tributary why` and the automationEvaluations query, on records the automation tick really wrote:
// in-process on Postgres (ticks at pinned instants), and through a real `tributary dev` server where
// automation runs on the clock.

type Reason = {
  operand: string;
  detail: string;
  partitions: [string, string][] | null;
  upstream: string | null;
  eventId: number | string | null;
  tick: string | null;
  runIds: string[] | null;
};
type Rec = {
  id: number | string;
  tick: number;
  evaluatedAt: string;
  decision: string;
  partitions: [string, string][];
  count: number | null;
  condition: string;
  runId: string | null;
  reasons: Reason[];
};
type WhyJson = {
  ok: boolean;
  assetKey: string;
  partition: string | null;
  condition: string | null;
  paused: boolean;
  summary: string;
  records: Rec[];
};
type GraphQLResult<T> = { data?: T; errors?: { message: string; extensions?: { code?: string } }[] };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const DEFS = `
import { asset, daily, eager, onCron } from "tributary";
const days = daily({ start: "2025-03-01" });
export const src = asset({ key: "why/src", partitions: days }, async (ctx) => ctx.partition.key);
export const clean = asset({ key: "why/clean", partitions: days, automation: eager(), deps: { src } }, async (_ctx, { src }) => "clean " + src);
export const nightly = asset({ key: "why/nightly", automation: onCron("0 3 * * *") }, async () => 1);
export const manual = asset({ key: "why/manual" }, async () => 1);
`;

describePostgres("tributary why (in-process, Postgres, records from real automation ticks)", () => {
  let h: Harness;
  let dataDir: string;
  const t0 = new Date("2025-03-20T12:00:00Z");

  beforeAll(async () => {
    h = await Harness.create({ files: { "why.ts": DEFS }, start: false });
    dataDir = await h.tempDir("tributary-why-data-");
    const task = new AutomationTask({
      store: new PgAutomationStore(h.db),
      runs: h.runs,
      graphs: h.graphs,
      definitions: h.definitions,
      owner: "why-test",
      minIntervalMs: 0,
    });
    const store = new PgAutomationStore(h.db);
    // First evaluation: clean's latest day is missing and src is not there (declined); the nightly cron fires.
    await task.tick(t0);
    // Four src days in one transaction, so the tick sees them together: one request of two ranges.
    await new PgEventStore(h.db).reportEvents(
      ["2025-03-10", "2025-03-11", "2025-03-12", "2025-03-15"].map((partitionKey) => ({
        assetKey: "why/src",
        partitionKey,
        kind: "external" as const,
        metadata: {},
      })),
      t0,
    );
    let clock = t0.getTime();
    // Tick until the request is there.
    for (let i = 0; i < 200; i++) {
      await task.tick(new Date((clock += 10)));
      if ((await store.listEvaluations({ assetKey: "why/clean", limit: 10 })).some((r) => r.decision === "requested")) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    await new PgPauseStore(h.db).pause({ assetKeys: ["why/nightly"] }, new Date(clock));
    // A paused asset is looked at in the next full evaluation (the reconciler's timer; here at once).
    task.requestFullEvaluation();
    await task.tick(new Date((clock += 10)));
    await task.stop();
  }, 120_000);
  afterAll(async () => {
    await h?.stop();
  });

  const why = (...args: string[]) =>
    runCli(["why", ...args, "--definitions", h.dir, "--data-dir", dataDir, "--url", "http://127.0.0.1:9"], {
      env: { DATABASE_URL: h.url },
    });
  const whyJson = async (...args: string[]): Promise<WhyJson> => {
    const r = await why(...args, "--json");
    expect(r.code, r.stderr + r.stdout).toBe(0);
    return JSON.parse(r.stdout) as WhyJson;
  };

  it("lists the latest decisions of an asset, newest first, with the condition and the reasons", async () => {
    const out = await whyJson("why/clean");
    expect(out).toMatchObject({ ok: true, assetKey: "why/clean", partition: null, condition: "eager()", paused: false });
    const ids = out.records.map((r) => Number(r.id));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    const requested = out.records.find((r) => r.decision === "requested")!;
    expect(requested).toMatchObject({
      decision: "requested",
      partitions: [
        ["2025-03-10", "2025-03-12"],
        ["2025-03-15", "2025-03-15"],
      ],
      count: 4,
      condition: "eager()",
    });
    expect(requested.runId).toMatch(UUID);
    const updated = requested.reasons.find((x) => x.operand === "upstream_updated")!;
    // clean never materialised these days, so the tick names no particular upstream event for them.
    expect(updated.detail).toMatch(/upstream .*materialised/);
    expect(updated).toMatchObject({
      partitions: [
        ["2025-03-10", "2025-03-12"],
        ["2025-03-15", "2025-03-15"],
      ],
    });
    // One run per partition key: the record names them all.
    const runs = requested.reasons.find((x) => x.operand === "runs")!;
    expect(runs.runIds).toHaveLength(4);
    expect(runs.runIds).toContain(requested.runId);
    // The latest day is still declined: src has no such partition.
    expect(out.records[0]).toMatchObject({ decision: "declined", partitions: [["2025-03-19", "2025-03-19"]], count: 1 });
    expect(out.records[0]!.reasons.map((x) => x.operand)).toEqual(["is_missing", "upstreams_not_ready"]);
    expect(out.records[0]!.reasons[1]).toMatchObject({ upstream: "why/src" });
    expect(out.summary).toMatch(
      /^why\/clean: declined 2025-03-19 at 2025-03-20T12:00:00\.\d{3}Z: waiting for upstream "why\/src": .* \(\+1 more reason\)$/,
    );

    const one = await whyJson("why/clean", "--limit", "1");
    expect(one.records).toHaveLength(1);
    expect(one.records[0]!.id).toBe(out.records[0]!.id);
  });

  it("--partition keeps the records whose ranges hold the partition, matched by index inside a range", async () => {
    const inside = await whyJson("why/clean", "--partition", "2025-03-11");
    expect(inside.partition).toBe("2025-03-11");
    expect(inside.records.map((r) => r.decision)).toEqual(["requested"]);
    expect(inside.records[0]!.reasons.map((x) => x.operand)).toEqual(["upstream_updated", "runs"]);
    expect(inside.summary).toMatch(/^why\/clean partition 2025-03-11: requested at \S+ \(run [0-9a-f-]{36}\): .*upstream .*materialised/);

    const latest = await whyJson("why/clean", "--partition", "2025-03-19");
    expect(latest.records.length).toBeGreaterThanOrEqual(1);
    for (const r of latest.records) expect(r).toMatchObject({ decision: "declined", partitions: [["2025-03-19", "2025-03-19"]] });

    const human = await why("why/clean", "--partition", "2025-03-05");
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^condition\s+eager\(\)$/m);
    expect(human.stdout).toMatch(/^automation\s+active$/m);
    expect(human.stdout).toMatch(/^partition\s+2025-03-05$/m);
    expect(human.stdout).toMatch(/^not evaluated yet$/m);
  });

  it("prints the decisions for people: time, decision, partitions, run, and each reason indented", async () => {
    const r = await why("why/clean");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^condition\s+eager\(\)$/m);
    expect(r.stdout).toMatch(/^latest\s+why\/clean: declined 2025-03-19 at /m);
    expect(r.stdout).toMatch(
      /^2025-03-20T12:00:00\.\d{3}Z\s+requested\s+2025-03-10\.\.2025-03-12, 2025-03-15 \(4 partitions\)\s+run [0-9a-f-]{36}$/m,
    );
    expect(r.stdout).toMatch(/^ {4}upstream_updated: .*upstream .*materialised/m);
    expect(r.stdout).toMatch(/^ {4}runs: 4 runs$/m);
    expect(r.stdout).toMatch(/^2025-03-20T12:00:00\.000Z\s+declined\s+2025-03-19$/m);
    expect(r.stdout).toMatch(
      /^ {4}upstreams_not_ready: waiting for upstream "why\/src": partitions it reads are not materialised \(e\.g\. "2025-03-19"\)$/m,
    );
  });

  it("shows a paused asset, its cron request and its skips; and an asset without a condition", async () => {
    const r = await why("why/nightly");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^condition\s+onCron\("0 3 \* \* \*"\)$/m);
    expect(r.stdout).toMatch(/^automation\s+paused$/m);
    expect(r.stdout).toMatch(/^\S+\s+skipped\n {4}paused: automation is paused for this asset/m);
    expect(r.stdout).toMatch(
      /^2025-03-20T12:00:00\.000Z\s+requested\s+run [0-9a-f-]{36}\n {4}cron_tick: cron "0 3 \* \* \*" ticked at 2025-03-20T03:00:00\.000Z$/m,
    );
    const j = await whyJson("why/nightly");
    expect(j.paused).toBe(true);
    expect(j.records.map((x) => x.decision)).toEqual(["skipped", "requested"]);
    expect(j.records[0]).toMatchObject({ partitions: [], count: 0 });
    expect(j.records[1]).toMatchObject({ partitions: [["", ""]], count: 1 });
    expect(j.records[1]!.reasons[0]).toMatchObject({ operand: "cron_tick", tick: "2025-03-20T03:00:00.000Z" });
    expect(j.summary).toMatch(/^why\/nightly: skipped at \S+: automation is paused for this asset/);

    const none = await why("why/manual");
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toMatch(/^no automation condition on why\/manual$/m);
    expect(none.stdout).toMatch(/^no evaluation records$/m);
    expect((await whyJson("why/manual")).summary).toBe("no automation condition on why/manual");
  });

  it.each([
    [["why/clen"], /GRAPH_UNKNOWN_ASSET.*no asset has the key "why\/clen"; did you mean "why\/clean"\?/],
    [["why/clean", "--partition", "2025-3-11"], /PARTITION_KEY_INVALID.*asset "why\/clean": "2025-3-11" is not a partition of daily/],
    [["why/clean", "--partition", "2025-02-28"], /PARTITION_KEY_INVALID.*asset "why\/clean": "2025-02-28" is not a partition of daily/],
    [
      ["why/nightly", "--partition", "2025-03-11"],
      /PARTITION_UNEXPECTED.*asset "why\/nightly" is not partitioned: leave out the partition \(got "2025-03-11"\)/,
    ],
    [["why/clean", "--limit", "0"], /INPUT_INVALID.*--limit: "0" must be a whole number from 1 to 200/],
    [["why/clean", "--limit", "ten"], /INPUT_INVALID.*--limit: "ten" must be a whole number from 1 to 200/],
  ])("rejects %j with exit code 1 and the reason", async (args, reason) => {
    const r = await why(...args);
    expect(r.code, r.stdout).toBe(1);
    expect(r.stderr).toMatch(reason);
    expect(r.stdout).toBe("");
  });

  it("reports errors as JSON with --json", async () => {
    const r = await why("why/clen", "--json");
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, error: { code: "GRAPH_UNKNOWN_ASSET" } });
  });
});

// Through a real server: `tributary dev` on a database of its own, its automation running on the real clock.
const LIVE_DEFS = `
import { asset, daily, eager } from "tributary";
const days = daily({ start: "2025-01-01" });
export const src = asset({ key: "live/src", partitions: days }, async (ctx) => ctx.partition.key);
export const clean = asset({ key: "live/clean", partitions: days, automation: eager(), deps: { src } }, async (_ctx, { src }) => "clean " + src);
export const once = asset({ key: "live/once", automation: eager() }, async () => 1);
`;

const QUERY = `query ($assetKey: String!, $partition: String, $first: Int) {
  automationEvaluations(assetKey: $assetKey, partition: $partition, first: $first) {
    assetKey partition condition paused summary
    records { id tick evaluatedAt decision partitions count condition runId reasons { operand detail partitions upstream eventId tick runIds } }
  }
}`;

describePostgres("automationEvaluations and tributary why through a running server", () => {
  let dev: DevServer;
  let store: CommandStore | undefined;
  const tempDirs: string[] = [];
  let defsDir: string;
  const url = () => dev.url;
  async function gql<T>(query: string, variables: Record<string, unknown> = {}): Promise<GraphQLResult<T>> {
    const res = await fetch(`${url()}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query, variables }),
    });
    return (await res.json()) as GraphQLResult<T>;
  }
  const evaluations = async (variables: Record<string, unknown>) => {
    const r = await gql<{ automationEvaluations: Omit<WhyJson, "ok"> }>(QUERY, variables);
    expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
    return r.data!.automationEvaluations;
  };

  beforeAll(async () => {
    defsDir = await mkdtemp(path.join(tmpdir(), "tributary-why-defs-"));
    tempDirs.push(defsDir);
    store = await commandStore("tributary-why-dev-");
    await writeFile(path.join(defsDir, "live.ts"), LIVE_DEFS);
    dev = await startDev({ dataDir: store.dataDir, env: store.env, definitionsDir: defsDir });
  }, 120_000);
  afterAll(async () => {
    await dev?.stop();
    await Promise.all([...tempDirs.map((d) => rm(d, { recursive: true, force: true })), store?.remove()]);
  });

  it("answers why a partition waited, and why it ran once its upstream arrived", async () => {
    // The first evaluation: the latest day of clean is missing, and src has no such day.
    const first = await eventually(
      async () => {
        const e = await evaluations({ assetKey: "live/clean" });
        return e.records.length > 0 ? e : undefined;
      },
      60_000,
      () => `the first evaluation\n${dev.output()}`,
    );
    expect(first).toMatchObject({ assetKey: "live/clean", partition: null, condition: "eager()", paused: false });
    const declined = first.records[0]!;
    expect(declined).toMatchObject({ decision: "declined", count: 1, condition: "eager()", runId: null });
    expect(typeof declined.tick).toBe("number");
    const day = declined.partitions[0]![0];
    expect(declined.partitions).toEqual([[day, day]]);
    expect(declined.reasons).toContainEqual(
      expect.objectContaining({ operand: "upstreams_not_ready", upstream: "live/src", partitions: [[day, day]] }),
    );
    expect(first.summary).toContain(`live/clean: declined ${day} at `);

    // The upstream day arrives from outside: automation requests clean for it.
    const reported = await gql<{ reportAssetEvent: { eventId: string } }>(
      `mutation ($input: ReportAssetEventInput!) { reportAssetEvent(input: $input) { eventId } }`,
      { input: { assetKey: "live/src", partition: day } },
    );
    expect(reported.errors).toBeUndefined();
    // Settled: requested, the run materialised the day, and the next evaluation found nothing to do
    // (a record about no particular partition, so it concerns this one too).
    const ran = await eventually(
      async () => {
        const e = await evaluations({ assetKey: "live/clean", partition: day, first: 10 });
        return e.records.some((r) => r.decision === "requested") && e.records[0]?.decision === "skipped" ? e : undefined;
      },
      60_000,
      () => `clean to be requested and run\n${dev.output()}`,
    );
    expect(ran.partition).toBe(day);
    // Oldest: the first decline; in between maybe a decline while the run was in progress.
    expect(ran.records.at(-1)!.id).toBe(declined.id);
    expect(ran.records[0]!.reasons).toEqual([expect.objectContaining({ operand: "no_candidates", partitions: null })]);
    expect(ran.records[0]!.partitions).toEqual([]);
    const request = ran.records.find((r) => r.decision === "requested")!;
    expect(request.runId).toMatch(UUID);
    expect(request.partitions).toEqual([[day, day]]);
    expect(request.reasons).toContainEqual(expect.objectContaining({ operand: "upstream_updated", partitions: [[day, day]] }));
    expect(ran.summary).toMatch(new RegExp(`^live/clean partition ${day}: skipped at \\S+: nothing to do`));

    // The CLI asks the server (no database of its own: DATABASE_URL is empty and the data dir unused).
    const cli = await runCli([
      "why",
      "live/clean",
      "--partition",
      day,
      "--limit",
      "10",
      "--url",
      url(),
      "--definitions",
      defsDir,
      "--json",
    ]);
    expect(cli.code, cli.stderr).toBe(0);
    const viaCli = JSON.parse(cli.stdout) as WhyJson;
    const again = await evaluations({ assetKey: "live/clean", partition: day, first: 10 });
    expect(viaCli).toEqual({
      ok: true,
      ...again,
      records: again.records.map((r) => ({
        ...r,
        id: Number(r.id),
        reasons: r.reasons.map((x) => ({ ...x, eventId: x.eventId === null ? null : Number(x.eventId) })),
      })),
    });
    const human = await runCli(["why", "live/clean", "--partition", day, "--url", url(), "--definitions", defsDir]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`^\\S+\\s+requested\\s+${day}\\s+run ${request.runId}$`, "m"));
    expect(human.stdout).toMatch(/^ {4}upstream_updated: .*materialised/m);
  });

  it("an unpartitioned asset: requested once, then nothing to do", async () => {
    const e = await eventually(
      async () => {
        const x = await evaluations({ assetKey: "live/once" });
        return x.records.some((r) => r.decision === "requested") && x.records[0]?.decision === "skipped" ? x : undefined;
      },
      60_000,
      () => `live/once to run\n${dev.output()}`,
    );
    const requested = e.records.find((r) => r.decision === "requested")!;
    expect(requested).toMatchObject({ partitions: [["", ""]], count: 1 });
    expect(requested.runId).toMatch(UUID);
    expect(e.records[0]!.reasons).toEqual([expect.objectContaining({ operand: "no_candidates", partitions: null })]);
  });

  it("rejects bad input with a code and the reason", async () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ assetKey: "live/clean", first: 0 }, "INPUT_INVALID", /automationEvaluations\(first: 0\): first must be between 1 and 200/],
      [{ assetKey: "live/clean", first: 201 }, "INPUT_INVALID", /first must be between 1 and 200/],
      [{ assetKey: "live/clen" }, "GRAPH_UNKNOWN_ASSET", /no asset has the key "live\/clen"; did you mean "live\/clean"\?/],
      [
        { assetKey: "live/clean", partition: "2025-3-11" },
        "PARTITION_KEY_INVALID",
        /asset "live\/clean": "2025-3-11" is not a partition of daily/,
      ],
      [{ assetKey: "live/once", partition: "2025-03-11" }, "PARTITION_UNEXPECTED", /asset "live\/once" is not partitioned/],
    ];
    for (const [variables, code, message] of cases) {
      const r = await gql(QUERY, variables);
      expect(r.errors?.[0]?.extensions?.code, JSON.stringify(variables)).toBe(code);
      expect(r.errors?.[0]?.message).toMatch(message);
    }
    const cli = await runCli(["why", "live/clen", "--url", url(), "--definitions", defsDir]);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(/GRAPH_UNKNOWN_ASSET.*did you mean "live\/clean"\?/);
  });
});
