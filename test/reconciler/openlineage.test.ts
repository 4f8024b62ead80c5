import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { resolveSettings } from "../../src/cli/settings.js";
import { TributaryError } from "../../src/errors/index.js";
import {
  FileLineageSink,
  HttpLineageSink,
  liveStepEvents,
  OpenLineageTask,
  parseOpenLineageConfig,
  tryKey,
  tryRunId,
  type LineageDatasetEvent,
  type LineageEvent,
  type LineageSink,
  type OpenLineageEvent,
} from "../../src/reconciler/index.js";
import { PgEventStore, PgOpenLineageStore, type LineageLiveStep } from "../../src/storage/index.js";
import { Harness } from "../execution/harness.js";
import { createScratchDatabase, describePostgres } from "../support/pg.js";
import { WebhookReceiver } from "../support/webhook-receiver.js";

const NAMESPACE = "tributary://test";
const DEFS = `
import { asset, daily } from "tributary";
const days = daily({ start: "2025-01-01" });
export const raw = asset({ key: "lin/raw", partitions: days }, async (ctx) => ({ day: ctx.partition.key }));
export const clean = asset({ key: "lin/clean", partitions: days, deps: { raw } }, async (ctx, { raw }) => ({ day: raw.day, clean: true }));
export const broken = asset({ key: "lin/broken", retries: { max: 1, delay: 0 } }, async () => { throw new Error("warehouse down"); });
export const slow = asset({ key: "lin/slow" }, async (ctx) => {
  await new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, 10_000);
    ctx.signal.addEventListener("abort", () => { clearTimeout(timer); reject(ctx.signal.reason); });
  });
  return 1;
});
`;

/** An asset whose step runs until the file `gate` exists: a step that is still running for as long as a test needs. */
const gateDefs = (gate: string): string => `
import { existsSync } from "node:fs";
import { asset } from "tributary";
export const gated = asset({ key: "lin/gated" }, async () => {
  while (!existsSync(${JSON.stringify(gate)})) await new Promise((resolve) => setTimeout(resolve, 20));
  return 1;
});
`;

/** Runs the success and failure scenarios and waits for both runs. */
async function runBoth(h: Harness): Promise<{ ok: string; bad: string }> {
  const ok = await h.launch(["lin/raw", "lin/clean"], { partition: "2025-01-02" });
  const bad = await h.launch(["lin/broken"]);
  const [okRun, badRun] = await h.waitForRuns([ok, bad]);
  expect(okRun!.status).toBe("success");
  expect(badRun!.status).toBe("failed");
  return { ok, bad };
}

/** What the two runs must yield: per job (asset), the event types in order. */
function expectScenario(events: readonly LineageEvent[], runs: { ok: string; bad: string }): void {
  const byJob = (name: string): LineageEvent[] => events.filter((e) => e.job.name === name);
  for (const e of events) {
    expect(e.producer).toMatch(/^https:\/\//);
    expect(e.schemaURL).toBe("https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent");
    expect(e.job.namespace).toBe(NAMESPACE);
    expect(e.run.runId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Number.isNaN(Date.parse(e.eventTime))).toBe(false);
  }

  const raw = byJob("lin/raw");
  expect(raw.map((e) => e.eventType)).toEqual(["START", "COMPLETE"]);
  expect(raw[1]!.outputs).toEqual([
    { namespace: NAMESPACE, name: "lin/raw", facets: { tributary_partition: expect.objectContaining({ partitionKey: "2025-01-02" }) } },
  ]);
  expect(raw[1]!.run.facets["parent"]).toMatchObject({ run: { runId: runs.ok }, job: { namespace: NAMESPACE } });

  const clean = byJob("lin/clean");
  expect(clean.map((e) => e.eventType)).toEqual(["START", "COMPLETE"]);
  expect(clean[0]!.run.runId).toBe(clean[1]!.run.runId);
  expect(clean[1]!.inputs).toEqual([
    { namespace: NAMESPACE, name: "lin/raw", facets: { tributary_partition: expect.objectContaining({ partitionKey: "2025-01-02" }) } },
  ]);
  expect(clean[1]!.outputs.map((d) => d.name)).toEqual(["lin/clean"]);

  // Two tries: each its own OpenLineage run, both failed, with the error.
  const broken = byJob("lin/broken");
  expect(broken.map((e) => e.eventType)).toEqual(["START", "FAIL", "START", "FAIL"]);
  expect(new Set(broken.map((e) => e.run.runId)).size).toBe(2);
  expect(broken.map((e) => (e.run.facets["tributary"] as unknown as { tryNumber: number }).tryNumber)).toEqual([1, 1, 2, 2]);
  expect(broken[3]!.run.facets["errorMessage"]).toMatchObject({ message: expect.stringContaining("warehouse down") });
  expect(broken[3]!.run.facets["parent"]).toMatchObject({ run: { runId: runs.bad } });
  expect(broken[3]!.outputs).toEqual([{ namespace: NAMESPACE, name: "lin/broken", facets: {} }]);
}

const key = (e: LineageEvent): string => `${e.run.runId}/${e.eventType}`;

describe("openlineage: settings", () => {
  it("reads TRIBUTARY_OPENLINEAGE_URL / _FILE / _NAMESPACE and is off when neither is set", () => {
    expect(parseOpenLineageConfig({})).toBeUndefined();
    expect(parseOpenLineageConfig({ TRIBUTARY_OPENLINEAGE_URL: "https://marquez.example:5000/" })).toEqual({
      kind: "http",
      url: "https://marquez.example:5000",
      namespace: "tributary://default",
    });
    const file = path.join(tmpdir(), "tributary-ol-settings.jsonl");
    expect(
      resolveSettings({}, { TRIBUTARY_OPENLINEAGE_FILE: file, TRIBUTARY_OPENLINEAGE_NAMESPACE: "tributary://prod" }).openLineage,
    ).toEqual({
      kind: "file",
      file,
      namespace: "tributary://prod",
    });
    expect(resolveSettings({}, {}).openLineage).toBeUndefined();
  });

  it.each([
    [
      { TRIBUTARY_OPENLINEAGE_URL: "ftp://lineage.example/" },
      /TRIBUTARY_OPENLINEAGE_URL: "ftp:" URLs are not supported; give an http:\/\/ or https:\/\//,
    ],
    [{ TRIBUTARY_OPENLINEAGE_URL: "marquez 5000" }, /TRIBUTARY_OPENLINEAGE_URL: "marquez 5000" is not a URL/],
    [
      { TRIBUTARY_OPENLINEAGE_FILE: "/nonexistent-dir-for-tributary/x/lineage.jsonl" },
      /TRIBUTARY_OPENLINEAGE_FILE: \/nonexistent-dir-for-tributary\/x\/lineage.jsonl cannot be written/,
    ],
    [{ TRIBUTARY_OPENLINEAGE_FILE: tmpdir() }, /TRIBUTARY_OPENLINEAGE_FILE: .* is a directory/],
    [
      { TRIBUTARY_OPENLINEAGE_URL: "http://a", TRIBUTARY_OPENLINEAGE_FILE: "/tmp/x" },
      /TRIBUTARY_OPENLINEAGE_URL and TRIBUTARY_OPENLINEAGE_FILE are both set/,
    ],
  ])("rejects %j at startup, naming the setting", (env, message) => {
    let error: unknown;
    try {
      resolveSettings({}, env);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(TributaryError);
    expect((error as TributaryError).code).toBe("OPENLINEAGE_CONFIG_INVALID");
    expect((error as Error).message).toMatch(message);
  });
});

describe("openlineage: HTTP sink", () => {
  const event = (name: string): LineageEvent => ({
    eventType: "START",
    eventTime: new Date(0).toISOString(),
    run: { runId: "00000000-0000-5000-8000-000000000000", facets: {} },
    job: { namespace: NAMESPACE, name, facets: {} },
    inputs: [],
    outputs: [],
    producer: "https://example.com",
    schemaURL: "https://example.com",
  });

  it("starts no POST that could outlive its deadline, after the first", async () => {
    const receiver = await WebhookReceiver.start();
    try {
      const sink = new HttpLineageSink(receiver.url(""), 1_000);
      expect(await sink.send([event("a"), event("b")], performance.now())).toEqual({ delivered: 1 });
      expect(await sink.send([event("c"), event("d")], performance.now() + 60_000)).toEqual({ delivered: 2 });
      expect(receiver.requests.map((r) => (r.body as LineageEvent).job.name)).toEqual(["a", "c", "d"]);
    } finally {
      await receiver.close();
    }
  });

  it("reports an unreachable endpoint by its origin, with a stable code", async () => {
    const receiver = await WebhookReceiver.start();
    const url = receiver.url("");
    await receiver.close();
    const result = await new HttpLineageSink(`${url}/secret-path`).send([event("a")], performance.now() + 60_000);
    expect(result.delivered).toBe(0);
    expect((result.error as TributaryError).code).toBe("OPENLINEAGE_UNREACHABLE");
    expect(result.error!.message).toMatch(new RegExp(`^OpenLineage endpoint ${url.replace(/[.]/g, "\\.")} could not be reached`));
    expect(result.error!.message).not.toContain("secret-path");
  });
});

describePostgres("openlineage: run events from real runs", () => {
  let h: Harness | undefined;
  let receiver: WebhookReceiver | undefined;
  let dir: string | undefined;
  const tasks: OpenLineageTask[] = [];
  const warnings: string[] = [];

  afterEach(async () => {
    for (const t of tasks.splice(0)) await t.stop();
    await h?.stop();
    await receiver?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
    h = receiver = dir = undefined;
    warnings.length = 0;
  });

  /** A harness of `nodes` reconcilers, each with an OpenLineage task sending to `sink`. */
  async function start(sink: LineageSink, nodes = 1): Promise<Harness> {
    h = await Harness.create({
      files: { "lineage.ts": DEFS },
      nodes,
      tasks: (s) => {
        const task = new OpenLineageTask({
          store: new PgOpenLineageStore(s.handle.db),
          sink,
          namespace: NAMESPACE,
          owner: `node-${s.index}`,
          batch: 2,
          intervalMs: 20,
          retryDelayMs: 20,
          maxRetryDelayMs: 50,
          clock: s.clock,
          log: (level, message) => warnings.push(`${level}: ${message}`),
        });
        tasks.push(task);
        return [task];
      },
    });
    return h;
  }

  it("appends START/COMPLETE and FAIL events with inputs and outputs to a file sink", async () => {
    dir = await mkdtemp(path.join(tmpdir(), "tributary-ol-"));
    const file = path.join(dir, "lineage.jsonl");
    const harness = await start(new FileLineageSink(file));
    const runs = await runBoth(harness);
    const read = async (): Promise<LineageEvent[]> =>
      (await readFile(file, "utf8").catch(() => ""))
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as LineageEvent);
    const events = await harness.until(
      async () => {
        const e = await read();
        return e.length >= 8 && e;
      },
      15_000,
      "8 OpenLineage events in the file",
    );
    expectScenario(events, runs);
    expect(events).toHaveLength(8);
    expect(warnings).toEqual([]);

    // A step failed by canceling its run ends in ABORT.
    const canceled = await harness.launch(["lin/slow"]);
    await harness.until(
      async () => {
        const { rows } = await sql<{
          n: number;
        }>`select count(*)::int as n from steps where run_id = ${canceled} and state = 'running'`.execute(harness.db);
        return rows[0]!.n === 1;
      },
      15_000,
      "the slow step to run",
    );
    await harness.runs.requestCancel(canceled, new Date());
    expect((await harness.waitForRun(canceled)).status).toBe("canceled");
    const all = await harness.until(
      async () => {
        const e = await read();
        return e.length >= 10 && e;
      },
      15_000,
      "the canceled step's events",
    );
    expect(all.slice(8).map((e) => [e.job.name, e.eventType])).toEqual([
      ["lin/slow", "START"],
      ["lin/slow", "ABORT"],
    ]);
    expect(all[9]!.run.facets["errorMessage"]).toBeDefined();
  });

  it("POSTs to <url>/api/v1/lineage; an endpoint that fails then recovers gets every event once, in order, from two reconcilers", async () => {
    receiver = await WebhookReceiver.start();
    // The 2nd to 4th requests fail: the first batch is cut after one event, then whole rounds fail and back off.
    receiver.respond = (i) => (i >= 1 && i <= 3 ? 503 : 200);
    const harness = await start(new HttpLineageSink(receiver.url("/marquez")), 2);
    const runs = await runBoth(harness);
    const accepted = (): LineageEvent[] => receiver!.accepted.map((r) => r.body as LineageEvent);
    await harness.until(async () => accepted().length >= 8, 15_000, "8 OpenLineage events accepted");
    // A little longer: nothing more may arrive (no double sends from the second reconciler, no resends).
    await new Promise((resolve) => setTimeout(resolve, 300));
    const events = accepted();
    expect(receiver.requests.every((r) => r.method === "POST" && r.path === "/marquez/api/v1/lineage")).toBe(true);
    expect(receiver.requests.filter((r) => r.status >= 500)).toHaveLength(3);
    expect(events.map(key)).toEqual([...new Set(events.map(key))]);
    expect(events).toHaveLength(8);
    expectScenario(events, runs);
    // Per run, START precedes its end; per step, tries in order.
    for (const e of events.filter((x) => x.eventType !== "START")) {
      const startAt = events.findIndex((x) => x.run.runId === e.run.runId && x.eventType === "START");
      expect(startAt).toBeGreaterThanOrEqual(0);
      expect(startAt).toBeLessThan(events.indexOf(e));
    }
    expect(warnings.some((w) => w.includes("HTTP 503") && w.includes("retrying"))).toBe(true);
    expect(warnings.filter((w) => w.includes("may be sent again"))).toEqual([]);
  });

  it("passes the emission lease to the other reconciler when its holder stops, without resending", async () => {
    receiver = await WebhookReceiver.start();
    const harness = await start(new HttpLineageSink(receiver.url()), 2);
    await runBoth(harness);
    const accepted = (): LineageEvent[] => receiver!.accepted.map((r) => r.body as LineageEvent);
    await harness.until(async () => accepted().length >= 8, 15_000, "the first 8 events");
    const { rows } = await sql<{ owner: string }>`select value->>'owner' as owner from cursors where name = 'openlineage'`.execute(
      harness.db,
    );
    const holder = tasks.findIndex((_, i) => rows[0]?.owner === `node-${i}`);
    expect(holder).toBeGreaterThanOrEqual(0);
    await tasks[holder]!.stop();

    const again = await harness.launch(["lin/raw"], { partition: "2025-01-05" });
    await harness.waitForRun(again);
    await harness.until(async () => accepted().length >= 10, 15_000, "the next run's 2 events from the other reconciler");
    const after = await sql<{ owner: string }>`select value->>'owner' as owner from cursors where name = 'openlineage'`.execute(harness.db);
    expect(after.rows[0]?.owner).toBe(`node-${1 - holder}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const events = accepted();
    expect(events).toHaveLength(10);
    expect(events.map(key)).toEqual([...new Set(events.map(key))]);
    expect(events.slice(8).map((e) => [e.job.name, e.eventType])).toEqual([
      ["lin/raw", "START"],
      ["lin/raw", "COMPLETE"],
    ]);
  });

  // START while the step runs; observations and external reports.

  const accepted = (): LineageEvent[] => receiver!.accepted.map((r) => r.body as LineageEvent);
  const stepState = async (harness: Harness, runId: string): Promise<string | undefined> =>
    (await sql<{ state: string }>`select state from steps where run_id = ${runId}`.execute(harness.db)).rows[0]?.state;
  const marks = async (harness: Harness): Promise<unknown> =>
    (await sql<{ tries: unknown }>`select value->'tries' as tries from cursors where name = 'openlineage'`.execute(harness.db)).rows[0]
      ?.tries;

  function task(harness: Harness, owner: string): OpenLineageTask {
    const t = new OpenLineageTask({
      store: new PgOpenLineageStore(harness.db),
      sink: new HttpLineageSink(receiver!.url()),
      namespace: NAMESPACE,
      owner,
      batch: 2,
      log: (level, message) => warnings.push(`${level}: ${message}`),
    });
    tasks.push(t);
    return t;
  }

  it("the reconcilers' task sends a try's START while it still runs, then its end, each once, with two reconcilers", async () => {
    receiver = await WebhookReceiver.start();
    dir = await mkdtemp(path.join(tmpdir(), "tributary-ol-gate-"));
    const gate = path.join(dir, "open");
    const harness = (h = await Harness.create({
      files: { "lineage.ts": DEFS, "gate.ts": gateDefs(gate) },
      nodes: 2,
      tasks: (s) => {
        const t = new OpenLineageTask({
          store: new PgOpenLineageStore(s.handle.db),
          sink: new HttpLineageSink(receiver!.url()),
          namespace: NAMESPACE,
          owner: `node-${s.index}`,
          intervalMs: 20,
          clock: s.clock,
          log: (level, message) => warnings.push(`${level}: ${message}`),
        });
        tasks.push(t);
        return [t];
      },
    }));
    const run = await harness.launch(["lin/gated"]);
    const start = await harness.until(
      async () => accepted().find((e) => e.job.name === "lin/gated"),
      15_000,
      "the START of the gated step",
    );
    // The receiver has the START while the step is still running (it cannot end before the gate opens).
    expect(start.eventType).toBe("START");
    expect(await stepState(harness, run)).toBe("running");
    expect(start.run.facets["parent"]).toMatchObject({ run: { runId: run } });
    const { rows } = await sql<{
      started_at: Date;
    }>`select t.started_at from step_tries t join steps s on s.id = t.step_id where s.run_id = ${run}`.execute(harness.db);
    expect(start.eventTime).toBe(rows[0]!.started_at.toISOString());
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(accepted().filter((e) => e.job.name === "lin/gated")).toHaveLength(1);

    await writeFile(gate, "");
    expect((await harness.waitForRun(run)).status).toBe("success");
    await harness.until(async () => accepted().length >= 2, 15_000, "the gated step's COMPLETE");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const events = accepted();
    expect(events.map((e) => [e.job.name, e.eventType])).toEqual([
      ["lin/gated", "START"],
      ["lin/gated", "COMPLETE"],
    ]);
    expect(events[1]!.run.runId).toBe(start.run.runId);
    expect(await marks(harness)).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it("keeps what it sent ahead of the cursor in the cursor row: a restarted emitter sends neither START nor end twice", async () => {
    receiver = await WebhookReceiver.start();
    dir = await mkdtemp(path.join(tmpdir(), "tributary-ol-gate-"));
    const gate = path.join(dir, "open");
    const harness = (h = await Harness.create({ files: { "lineage.ts": DEFS, "gate.ts": gateDefs(gate) } }));
    const run = await harness.launch(["lin/gated"]);
    await harness.until(async () => (await stepState(harness, run)) === "running", 15_000, "the gated step to run");

    const first = task(harness, "first");
    expect(await first.deliver()).toBe(1);
    expect(accepted().map((e) => e.eventType)).toEqual(["START"]);
    const stepId = Number((await sql<{ id: string }>`select id from steps where run_id = ${run}`.execute(harness.db)).rows[0]!.id);
    expect(await marks(harness)).toEqual([[stepId, 1, 0]]);
    expect(await first.deliver()).toBe(0);
    // A second reconciler while the first holds the lease: sends nothing.
    const other = task(harness, "other");
    expect(await other.deliver()).toBe(0);

    // The first stops (a restart): the next emitter resumes from the cursor row, START already sent.
    await first.stop();
    const second = task(harness, "second");
    expect(await second.deliver()).toBe(0);
    await writeFile(gate, "");
    expect((await harness.waitForRun(run)).status).toBe("success");
    await harness.until(async () => (await second.deliver()) > 0 && true, 15_000, "the COMPLETE");
    expect(await second.deliver()).toBe(0);
    await second.stop();
    expect(await task(harness, "third").deliver()).toBe(0);

    const events = accepted();
    expect(events.map((e) => e.eventType)).toEqual(["START", "COMPLETE"]);
    expect(new Set(events.map((e) => e.run.runId)).size).toBe(1);
    expect(await marks(harness)).toEqual([]);
  });

  it("sends a DatasetEvent for each observation and external report, once", async () => {
    receiver = await WebhookReceiver.start();
    const harness = (h = await Harness.create({ files: { "lineage.ts": DEFS } }));
    const events = new PgEventStore(harness.db);
    const [observed, reported] = await events.reportEvents(
      [
        { assetKey: "lin/raw", partitionKey: "2025-01-03", kind: "observation", metadata: { rows: 12 }, dataVersion: "v7" },
        { assetKey: "lin/broken", partitionKey: "", kind: "external", metadata: { by: "airbyte" } },
      ],
      new Date("2025-01-04T05:06:07.000Z"),
    );
    const first = task(harness, "first");
    // Batches of two: the second round finds nothing more.
    expect(await harness.until(async () => (await first.deliver()) || false, 15_000, "the dataset events")).toBe(2);
    await first.stop();
    expect(await task(harness, "second").deliver()).toBe(0);

    const sent = receiver.accepted.map((r) => r.body as LineageDatasetEvent);
    expect(sent).toEqual([
      {
        eventTime: "2025-01-04T05:06:07.000Z",
        producer: expect.stringMatching(/^https:\/\//),
        schemaURL: "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
        dataset: {
          namespace: NAMESPACE,
          name: "lin/raw",
          facets: {
            tributary_partition: expect.objectContaining({
              partitionKey: "2025-01-03",
              _producer: expect.any(String),
              _schemaURL: expect.any(String),
            }),
            version: expect.objectContaining({ datasetVersion: "v7", _schemaURL: expect.stringContaining("DatasetVersionDatasetFacet") }),
            tributary_event: expect.objectContaining({ kind: "observation", eventId: observed, metadata: { rows: 12 } }),
          },
        },
      },
      {
        eventTime: "2025-01-04T05:06:07.000Z",
        producer: expect.stringMatching(/^https:\/\//),
        schemaURL: "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
        dataset: {
          namespace: NAMESPACE,
          name: "lin/broken",
          facets: { tributary_event: expect.objectContaining({ kind: "external", eventId: reported, metadata: { by: "airbyte" } }) },
        },
      },
    ]);
    expect(sent.every((e) => !("run" in e) && !("eventType" in e))).toBe(true);
  });
  it("sends past a transaction open elsewhere, and a late commit of ours once, also when an entry was sent in part", async () => {
    const harness = (h = await Harness.create({ files: { "lineage.ts": DEFS }, start: false }));
    const other = await createScratchDatabase();
    const clients: pg.Client[] = [];
    const session = async (url: string) => {
      const client = new pg.Client({ connectionString: url });
      clients.push(client);
      await client.connect();
      await client.query("begin");
      await client.query("select pg_current_xact_id()");
      return client;
    };
    // Takes one event per send, then fails: every step outcome is sent in part first.
    const sent: OpenLineageEvent[] = [];
    const sink: LineageSink = {
      description: "one at a time",
      send: async (events) => {
        sent.push(events[0]!);
        return events.length > 1 ? { delivered: 1, error: new Error("one at a time") } : { delivered: 1 };
      },
    };
    const emitter = () =>
      new OpenLineageTask({ store: new PgOpenLineageStore(harness.db), sink, namespace: NAMESPACE, owner: "ol", batch: 3, log: () => {} });
    const names = () => sent.map((e) => ("eventType" in e ? `${e.eventType} ${e.job.name}@${e.run.runId}` : `dataset ${e.dataset.name}`));
    try {
      await session(other.url); // an idle psql in another database
      const late = await session(harness.url); // a long transaction of ours, older than what follows
      // A step outcome (no run row needed): a START and a COMPLETE, two events of one entry.
      await late.query(
        "insert into events (kind, asset_key, partition_key, run_id, step_id, try_number) values ('materialization', 'lin/raw', '2025-01-01', $1, 1, 1)",
        [randomUUID()],
      );
      await harness.db.transaction().execute(async (trx) => {
        await sql`insert into events (kind, asset_key, partition_key, run_id, step_id, try_number)
                  values ('materialization', 'lin/raw', '2025-01-02', ${randomUUID()}, 2, 1)`.execute(trx);
      });
      const first = emitter();
      // The committed outcome's START; its COMPLETE is owed.
      await first.deliver();
      expect(names().map((e) => e.split("@")[0])).toEqual(["START lin/raw"]);
      await late.query("commit");
      await new PgEventStore(harness.db).reportEvents(
        [{ assetKey: "lin/broken", partitionKey: "", kind: "external", metadata: {} }],
        new Date(),
      );
      for (let i = 0; i < 10 && sent.length < 5; i++) await first.deliver();
      const events = names();
      expect(events).toHaveLength(5);
      expect(new Set(events).size).toBe(5);
      // Step 2 (sent in part) is completed first, then step 1 (committed late), then the report.
      expect(events.map((e) => e.split("@")[0])).toEqual([
        "START lin/raw",
        "COMPLETE lin/raw",
        "START lin/raw",
        "COMPLETE lin/raw",
        "dataset lin/broken",
      ]);
      expect(events[0]!.split("@")[1]).toBe(events[1]!.split("@")[1]);
      expect(events[2]!.split("@")[1]).toBe(events[3]!.split("@")[1]);
      // A restarted emitter has nothing left to send.
      await first.stop();
      expect(await emitter().deliver()).toBe(0);
      expect(sent).toHaveLength(5);
    } finally {
      for (const c of clients) await c.end().catch(() => undefined);
      await other.drop();
    }
  });
});

describe("openlineage: a try's START before it ends (pure)", () => {
  const tryOf = (tryNumber: number, state: string, error: string | null = null) => ({
    tryNumber,
    state,
    startedAt: new Date(Date.UTC(2025, 0, 1, 0, tryNumber)),
    endedAt: state === "running" ? null : new Date(Date.UTC(2025, 0, 1, 0, tryNumber, 30)),
    errorMessage: error,
  });
  const step = (state: string, tries: LineageLiveStep["tries"]): LineageLiveStep => ({
    stepId: 7,
    runId: "11111111-1111-4111-8111-111111111111",
    assetKey: "lin/x",
    partitionKey: "",
    jobName: null,
    state,
    tryNumber: tries.at(-1)!.tryNumber,
    endedAt: null,
    tries,
  });
  const kinds = (events: ReturnType<typeof liveStepEvents>) =>
    events.map((p) => `${p.try!.tryNumber} ${(p.event as LineageEvent).eventType}`);
  const now = new Date(Date.UTC(2025, 0, 2));

  it("starts a running try, ends a retried one, and leaves what the marks cover", () => {
    const retrying = step("running", [tryOf(1, "failed", "boom"), tryOf(2, "running")]);
    expect(kinds(liveStepEvents(retrying, new Map(), NAMESPACE, now))).toEqual(["1 START", "1 FAIL", "2 START"]);
    expect(kinds(liveStepEvents(retrying, new Map([[tryKey(7, 1), false]]), NAMESPACE, now))).toEqual(["1 FAIL", "2 START"]);
    expect(
      kinds(
        liveStepEvents(
          retrying,
          new Map([
            [tryKey(7, 1), true],
            [tryKey(7, 2), false],
          ]),
          NAMESPACE,
          now,
        ),
      ),
    ).toEqual([]);
    const [start] = liveStepEvents(retrying, new Map(), NAMESPACE, now);
    expect((start!.event as LineageEvent).eventTime).toBe("2025-01-01T00:01:00.000Z");
    expect((start!.event as LineageEvent).run.runId).toBe(tryRunId(7, 1));
  });

  it("ends the last try of a skipped or removed step in ABORT; a deferred step's waiting try is not over", () => {
    const deferred = step("deferred", [tryOf(1, "deferred")]);
    expect(kinds(liveStepEvents(deferred, new Map(), NAMESPACE, now))).toEqual(["1 START"]);
    expect(kinds(liveStepEvents(deferred, new Map([[tryKey(7, 1), false]]), NAMESPACE, now))).toEqual([]);
    for (const state of ["skipped", "removed"]) {
      const ended = liveStepEvents(
        step(state, [tryOf(1, "failed", "boom"), tryOf(2, "deferred")]),
        new Map([[tryKey(7, 2), false]]),
        NAMESPACE,
        now,
      );
      expect(kinds(ended)).toEqual(["1 START", "1 FAIL", "2 ABORT"]);
      expect((ended[1]!.event as LineageEvent).run.facets["errorMessage"]).toMatchObject({ message: "boom" });
    }
  });
});
