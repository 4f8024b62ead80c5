import { writeFile } from "node:fs/promises";
import path from "node:path";
import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { createApiApp } from "../../src/api/index.js";
import { syncDefinitions } from "../../src/cli/definitions-sync.js";
import { AlertsTask, parseAlertsConfig } from "../../src/reconciler/index.js";
import { PgAlertStore } from "../../src/storage/index.js";
import { describePostgres } from "../support/pg.js";
import { apiServicesOn } from "../support/api-services.js";
import { WebhookReceiver, type ReceivedRequest } from "../support/webhook-receiver.js";
import { Harness, sleep, type HarnessOptions } from "./harness.js";

const SALES = `
import { asset, daily } from "tributary";
export const orders = asset(
  { key: "sales/orders", partitions: daily({ start: "2025-01-01" }), owner: "team:sales", retries: { max: 1, delay: 0 } },
  async () => { throw new Error("warehouse down"); },
);
export const fine = asset({ key: "sales/fine", partitions: daily({ start: "2025-01-01" }), owner: "team:sales" }, async () => 1);
`;
const OPS = `
import { asset } from "tributary";
export const other = asset({ key: "ops/other", owner: "team:ops" }, async () => { throw new Error("ops broke"); });
`;

interface Body {
  text: string;
  alert: {
    kind: string;
    causeKey: string;
    assetKey: string | null;
    partitionKey: string | null;
    runId: string | null;
    owner: string | null;
    details: Record<string, unknown>;
  };
}
const bodyOf = (r: ReceivedRequest): Body => r.body as Body;

describePostgres("alerts", () => {
  let h: Harness | undefined;
  let receiver: WebhookReceiver | undefined;
  const tasks: AlertsTask[] = [];
  const logLines: string[] = [];
  const taskLog: string[] = [];

  afterEach(async () => {
    for (const t of tasks.splice(0)) await t.stop();
    await h?.stop();
    await receiver?.close();
    h = undefined;
    receiver = undefined;
    logLines.length = 0;
    taskLog.length = 0;
  });

  /** A harness whose reconcilers run an alerts task routed as `config` says (sales → /sales, anything else → /default). */
  async function start(options: Partial<HarnessOptions> & { delivery?: Record<string, unknown> } = {}): Promise<Harness> {
    receiver = await WebhookReceiver.start();
    const config = parseAlertsConfig(
      JSON.stringify({
        sinks: {
          "slack-sales": { type: "webhook", url: receiver.url("/sales"), timeout: "5s" },
          fallback: { type: "webhook", url: receiver.url("/default") },
        },
        routes: [{ owner: "team:sales", sinks: ["slack-sales", "log"] }],
        default: ["fallback"],
        ...(options.delivery ? { delivery: options.delivery } : {}),
      }),
      "alerts-test.json",
    );
    h = await Harness.create({
      files: { "sales.ts": SALES, "ops.ts": OPS },
      ...options,
      tasks: (s) => {
        const task = new AlertsTask({
          store: new PgAlertStore(s.handle.db),
          graphs: s.graphs,
          definitions: s.definitions,
          config,
          clock: s.clock,
          intervalMs: 0,
          logLine: (line) => logLines.push(line),
          log: (level, message) => taskLog.push(`${level}: ${message}`),
        });
        tasks.push(task);
        return [task];
      },
    });
    return h;
  }

  const alertRows = async () =>
    (
      await sql<{
        cause_key: string;
        kind: string;
        status: string;
        attempts: number;
        owner: string | null;
        sent_to: string[];
        last_error: unknown;
      }>`
        select cause_key, kind, status, attempts, owner, sent_to, last_error from alerts order by id`.execute(h!.db)
    ).rows;

  it("a step that fails for good gives exactly one webhook delivery, routed by the asset's owner", async () => {
    const h = await start();
    const run = await h.waitForRun(await h.launch(["sales/orders"], { partition: "2025-01-03" }));
    expect(run.status).toBe("failed");
    expect(run.steps[0]!.tries.map((t) => t.state)).toEqual(["failed", "failed"]);

    await h.until(async () => receiver!.requests.length >= 1 || undefined, 15_000, "the webhook delivery");
    const [req] = receiver!.requests;
    expect(req!.path).toBe("/sales");
    expect(req!.headers["content-type"]).toContain("application/json");
    const body = bodyOf(req!);
    expect(body.alert).toMatchObject({
      kind: "step_failed",
      causeKey: `step_failed:${run.steps[0]!.id}:2`,
      assetKey: "sales/orders",
      partitionKey: "2025-01-03",
      runId: run.id,
      owner: "team:sales",
      details: { asset: "sales/orders", partition: "2025-01-03", run: run.id, try: 2 },
    });
    expect((body.alert.details["error"] as { message: string }).message).toContain("warehouse down");
    expect(body.text).toContain("sales/orders");
    expect(body.text).toContain("2025-01-03");
    expect(body.text).toContain("team:sales");
    expect(body.text).toContain("warehouse down");
    // The route also names the log sink: one line for the same alert.
    await h.until(async () => (await alertRows())[0]?.status === "sent" || undefined, 10_000, "the alert marked sent");
    expect(logLines).toHaveLength(1);
    expect(logLines[0]).toMatch(/^alert kind=step_failed .*owner=team:sales asset=sales\/orders partition=2025-01-03/);

    // An owner without a route goes to the default sinks.
    expect((await h.waitForRun(await h.launch(["ops/other"]))).status).toBe("failed");
    await h.until(async () => receiver!.requests.length >= 2 || undefined, 15_000, "the second delivery");
    expect(receiver!.requests[1]!.path).toBe("/default");
    expect(bodyOf(receiver!.requests[1]!).alert).toMatchObject({
      kind: "step_failed",
      assetKey: "ops/other",
      partitionKey: null,
      owner: "team:ops",
    });

    // Passes go on; nothing is sent twice, and the retried first try gave no alert.
    await sleep(600);
    expect(receiver!.requests).toHaveLength(2);
    const rows = await alertRows();
    expect(rows.map((r) => [r.kind, r.status, r.attempts, r.owner])).toEqual([
      ["step_failed", "sent", 1, "team:sales"],
      ["step_failed", "sent", 1, "team:ops"],
    ]);
    expect(rows[0]!.sent_to.sort()).toEqual(["log", "slack-sales"]);

    // What was sent, through GraphQL.
    const app = createApiApp({ context: apiServicesOn(h.db), ping: async () => {}, version: "test" });
    const query = async (q: string) => {
      const res = await app.request("/graphql", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: q }),
      });
      return (await res.json()) as { data?: { alerts: Record<string, unknown>[] }; errors?: unknown[] };
    };
    const listed = await query(
      `{ alerts(assetKey: "sales/orders", status: sent, first: 10) { kind status owner assetKey partitionKey runId sentTo attempts sentAt payload } }`,
    );
    expect(listed.errors).toBeUndefined();
    expect(listed.data!.alerts).toHaveLength(1);
    expect(listed.data!.alerts[0]).toMatchObject({
      kind: "step_failed",
      status: "sent",
      owner: "team:sales",
      partitionKey: "2025-01-03",
      runId: run.id,
      attempts: 1,
    });
    expect((await query(`{ alerts(status: failed) { kind } }`)).data!.alerts).toEqual([]);
    expect((await query(`{ alerts { assetKey } }`)).data!.alerts.map((a) => a["assetKey"])).toEqual(["ops/other", "sales/orders"]);
    expect(h.errors()).toEqual([]);
  });

  it("a sink answering 500 gets the alert again after a backoff, and it is sent once", async () => {
    const h = await start({ delivery: { retryDelay: 100, maxAttempts: 5 } });
    receiver!.respond = (i) => (i === 0 ? 500 : 200);
    expect((await h.waitForRun(await h.launch(["sales/orders"], { partition: "2025-01-04" }))).status).toBe("failed");
    await h.until(async () => (await alertRows())[0]?.status === "sent" || undefined, 15_000, "the alert sent after a retry");
    expect(receiver!.requests.map((r) => r.status)).toEqual([500, 200]);
    expect(receiver!.accepted).toHaveLength(1);
    const [row] = await alertRows();
    expect(row).toMatchObject({ status: "sent", attempts: 2 });
    expect(JSON.stringify(row!.last_error)).toContain("HTTP 500");
    // The log sink took it on the first attempt; the retry went to the webhook only.
    expect(logLines).toHaveLength(1);
    await sleep(400);
    expect(receiver!.requests).toHaveLength(2);
  });

  it("gives an alert up after maxAttempts (status failed), with the last error", async () => {
    const h = await start({ delivery: { retryDelay: 50, maxAttempts: 3 } });
    receiver!.respond = () => 503;
    expect((await h.waitForRun(await h.launch(["ops/other"]))).status).toBe("failed");
    await h.until(async () => (await alertRows())[0]?.status === "failed" || undefined, 15_000, "the alert given up");
    expect(receiver!.requests.map((r) => r.status)).toEqual([503, 503, 503]);
    const [row] = await alertRows();
    expect(row).toMatchObject({ status: "failed", attempts: 3 });
    expect(JSON.stringify(row!.last_error)).toMatch(/fallback.*HTTP 503/);
    expect(taskLog).toEqual([expect.stringMatching(/^warn: 1 alert\(s\) could not be delivered/)]);
    await sleep(300);
    expect(receiver!.requests).toHaveLength(3);
  });

  it("two reconcilers deliver each alert once", async () => {
    const h = await start({ nodes: 2 });
    const run = await h.waitForRun(await h.launch(["sales/orders"], { from: "2025-01-01", to: "2025-01-08" }));
    expect(run.status).toBe("failed");
    expect(run.steps).toHaveLength(8);
    await h.until(async () => (await alertRows()).filter((r) => r.status === "sent").length === 8 || undefined, 20_000, "8 alerts sent");
    await sleep(500);
    const keys = receiver!.requests.map((r) => bodyOf(r).alert.causeKey);
    expect(keys).toHaveLength(8);
    expect(new Set(keys).size).toBe(8);
    expect(new Set(receiver!.requests.map((r) => bodyOf(r).alert.partitionKey))).toEqual(
      new Set(["2025-01-01", "2025-01-02", "2025-01-03", "2025-01-04", "2025-01-05", "2025-01-06", "2025-01-07", "2025-01-08"]),
    );
    expect(logLines).toHaveLength(8);
    expect((await alertRows()).every((r) => r.attempts === 1)).toBe(true);
    expect(h.errors()).toEqual([]);
  });

  it("a definitions file that stops loading alerts its assets' owners, once per broken version", async () => {
    const h = await start();
    const file = path.join(h.dir, "sales.ts");
    await writeFile(file, `import { asset } from "tributary";\nthrow new Error("broken on purpose");\n`);
    const sync = () => syncDefinitions(h.definitions, { dir: h.dir, timeoutMs: 30_000 });
    const outcome = await sync();
    expect(outcome.result.files.find((f) => f.file === "sales.ts")?.status).toBe("error");

    await h.until(async () => receiver!.requests.length >= 1 || undefined, 15_000, "the load error alert");
    const [req] = receiver!.requests;
    expect(req!.path).toBe("/sales");
    const body = bodyOf(req!);
    expect(body.alert).toMatchObject({ kind: "load_error", owner: "team:sales", assetKey: null });
    expect(body.alert.causeKey).toMatch(/^load_error:sales\.ts:/);
    expect(body.alert.details).toMatchObject({ file: "sales.ts", owners: ["team:sales"], assets: ["sales/fine", "sales/orders"] });
    expect(body.text).toContain("sales.ts");
    expect(body.text).toContain("broken on purpose");

    // Still broken, same source: no new alert. Broken differently: a new one.
    await sync();
    await sleep(400);
    expect(receiver!.requests).toHaveLength(1);
    await writeFile(file, `import { asset } from "tributary";\nthrow new Error("broken another way");\n`);
    await sync();
    await h.until(async () => receiver!.requests.length >= 2 || undefined, 15_000, "the second load error alert");
    expect(bodyOf(receiver!.requests[1]!).text).toContain("broken another way");
    await sleep(300);
    expect(receiver!.requests).toHaveLength(2);
    expect((await alertRows()).map((r) => r.kind)).toEqual(["load_error", "load_error"]);
  });
});
