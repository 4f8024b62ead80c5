import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { commandStore, describePostgres, type CommandStore } from "../support/pg.js";
import { cliBudget, DEV_START_BUDGET_MS, eventually, runCli, startDev, type DevServer } from "./run-cli.js";

// tributary pause|resume in-process and through a server, and the GraphQL mutations behind them.
const DEFS = `
import { asset, daily } from "tributary";
const days = daily({ start: "2025-01-01", end: "2025-01-04" });
export const orders = asset({ key: "sales/orders", partitions: days }, async (ctx) => ({ day: ctx.partition.key }));
export const revenue = asset({ key: "sales/revenue", partitions: days, deps: { orders } }, async (_ctx, { orders }) => orders);
export const profiles = asset({ key: "crm/profiles", group: "customers" }, async () => ({ n: 1 }));
`;

type PauseJson = {
  ok: boolean;
  paused: boolean;
  assets: { assetKey: string; group: string | null; paused: boolean; pausedAt: string | null; changed: boolean }[];
};
type GraphQLResult<T> = { data?: T; errors?: { message: string; extensions?: { code?: string } }[] };

let defsDir: string;
const tempDirs: string[] = [];
const stores: CommandStore[] = [];

beforeAll(async () => {
  defsDir = await mkdtemp(path.join(tmpdir(), "tributary-pause-defs-"));
  tempDirs.push(defsDir);
  await writeFile(path.join(defsDir, "defs.ts"), DEFS);
});
afterAll(async () => {
  await Promise.all([...tempDirs.map((d) => rm(d, { recursive: true, force: true })), ...stores.map((s) => s.remove())]);
});

/** A database of its own (Postgres; what the commands do is the same on the embedded one) and a data directory. */
async function store(): Promise<CommandStore> {
  const s = await commandStore("tributary-pause-data-");
  stores.push(s);
  return s;
}

describePostgres("tributary pause / resume (in-process)", () => {
  // No server listens on port 9: every command works in-process on the database.
  let at: CommandStore;
  beforeAll(async () => {
    at = await store();
  });
  const cli = (...args: string[]) =>
    runCli([...args, "--definitions", defsDir, "--data-dir", at.dataDir, "--url", "http://127.0.0.1:9"], { env: at.env });

  // Each command is a process of its own: the budget is per command.
  it("pauses named assets and a whole group, keeps the first pausedAt, and resumes them", { timeout: cliBudget(4) }, async () => {
    const first = await cli("pause", "sales/orders", "--json");
    expect(first.code, first.stderr).toBe(0);
    const one = JSON.parse(first.stdout) as PauseJson;
    expect(one).toMatchObject({
      ok: true,
      paused: true,
      assets: [{ assetKey: "sales/orders", group: "sales", paused: true, changed: true }],
    });
    const pausedAt = one.assets[0]!.pausedAt;
    expect(Number.isNaN(Date.parse(pausedAt!))).toBe(false);

    const group = await cli("pause", "--group", "sales", "--json");
    expect(group.code, group.stderr).toBe(0);
    const both = JSON.parse(group.stdout) as PauseJson;
    expect(both.assets.map((a) => [a.assetKey, a.paused, a.changed])).toEqual([
      ["sales/orders", true, false],
      ["sales/revenue", true, true],
    ]);
    // Pausing again does not move the time it was paused at.
    expect(both.assets[0]!.pausedAt).toBe(pausedAt);

    const human = await cli("pause", "crm/profiles", "sales/orders");
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^paused 1 asset\(s\); 1 already paused$/m);
    expect(human.stdout).toMatch(/crm\/profiles\s+customers\s+paused/);

    const resumed = await cli("resume", "crm/profiles", "--group", "sales", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect((JSON.parse(resumed.stdout) as PauseJson).assets.map((a) => [a.assetKey, a.paused, a.pausedAt, a.changed])).toEqual([
      ["crm/profiles", false, null, true],
      ["sales/orders", false, null, true],
      ["sales/revenue", false, null, true],
    ]);
  });

  it.each([
    [["pause", "sales/order"], /GRAPH_UNKNOWN_ASSET.*no asset has the key "sales\/order"; did you mean "sales\/orders"\?/],
    [["resume", "--group", "sale"], /GROUP_UNKNOWN.*no asset is in the group "sale"; the groups are "customers", "sales"/],
    [["pause"], /PAUSE_TARGET_REQUIRED.*name the assets to pause/],
    [["resume"], /PAUSE_TARGET_REQUIRED.*name the assets to resume/],
  ])("rejects %j with exit code 1 and the reason, changing nothing", { timeout: cliBudget(1) }, async (args, reason) => {
    const r = await cli(...args);
    expect(r.code, r.stdout).toBe(1);
    expect(r.stderr).toMatch(reason);
    expect(r.stdout).toBe("");
  });

  it("an unknown key among known ones pauses none of them", { timeout: cliBudget(2) }, async () => {
    const bad = await cli("pause", "sales/orders", "nope/x", "--json");
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout)).toMatchObject({ ok: false, error: { code: "GRAPH_UNKNOWN_ASSET" } });
    const check = await cli("resume", "sales/orders", "--json");
    expect((JSON.parse(check.stdout) as PauseJson).assets[0]).toMatchObject({ paused: false, changed: false });
  });
});

describePostgres("pauseAutomation / resumeAutomation through a server", () => {
  let dev: DevServer | undefined;
  const url = () => dev!.url;
  async function gql<T>(query: string, variables: Record<string, unknown> = {}): Promise<GraphQLResult<T>> {
    const res = await fetch(`${url()}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query, variables }),
    });
    return (await res.json()) as GraphQLResult<T>;
  }
  const pausedOf = async () => {
    const r = await gql<{ assets: { key: string; paused: boolean; pausedAt: string | null }[] }>("{ assets { key paused pausedAt } }");
    expect(r.errors).toBeUndefined();
    return Object.fromEntries(r.data!.assets.map((a) => [a.key, a.paused]));
  };

  beforeAll(async () => {
    const s = await store();
    dev = await startDev({ dataDir: s.dataDir, env: s.env, definitionsDir: defsDir, processes: 1 });
  }, DEV_START_BUDGET_MS + 30_000);
  afterAll(async () => {
    await dev?.stop();
  });

  it("pauses by key and group, shows Asset.paused, and rejects bad input with codes", async () => {
    expect(await pausedOf()).toEqual({ "crm/profiles": false, "sales/orders": false, "sales/revenue": false });
    const paused = await gql<{ pauseAutomation: { assetKey: string; paused: boolean; pausedAt: string | null; changed: boolean }[] }>(
      `mutation { pauseAutomation(input: { group: "sales" }) { assetKey paused pausedAt changed } }`,
    );
    expect(paused.errors).toBeUndefined();
    expect(paused.data!.pauseAutomation.map((a) => [a.assetKey, a.paused, a.changed])).toEqual([
      ["sales/orders", true, true],
      ["sales/revenue", true, true],
    ]);
    expect(await pausedOf()).toEqual({ "crm/profiles": false, "sales/orders": true, "sales/revenue": true });
    const one = await gql<{ asset: { paused: boolean; pausedAt: string } }>(`{ asset(key: "sales/orders") { paused pausedAt } }`);
    expect(one.data!.asset.pausedAt).toBe(paused.data!.pauseAutomation[0]!.pausedAt);

    const cases: [string, string, RegExp][] = [
      [`{ assetKeys: ["sales/ordrs"] }`, "GRAPH_UNKNOWN_ASSET", /did you mean "sales\/orders"\?/],
      [`{ group: "crm" }`, "GROUP_UNKNOWN", /the groups are "customers", "sales"/],
      [`{}`, "PAUSE_TARGET_REQUIRED", /name the assets to pause/],
      [`{ assetKeys: [""] }`, "INPUT_INVALID", /assetKeys\.0: must not be empty/],
    ];
    for (const [input, code, message] of cases) {
      const r = await gql(`mutation { pauseAutomation(input: ${input}) { assetKey } }`);
      expect(r.errors?.[0]?.extensions?.code, input).toBe(code);
      expect(r.errors?.[0]?.message).toMatch(message);
    }
    expect(await pausedOf()).toEqual({ "crm/profiles": false, "sales/orders": true, "sales/revenue": true });
  });

  it("a paused asset still runs when launched by hand", { timeout: 240_000 }, async () => {
    expect((await pausedOf())["sales/orders"]).toBe(true);
    const launched = await gql<{ launchRun: { id: string } }>(
      `mutation { launchRun(input: { assetKeys: ["sales/orders", "sales/revenue"], from: "2025-01-01", to: "2025-01-03" }) { id } }`,
    );
    expect(launched.errors).toBeUndefined();
    const id = launched.data!.launchRun.id;
    const status = await eventually(
      async () => {
        const r = await gql<{ run: { status: string } }>(`query ($id: String!) { run(id: $id) { status } }`, { id });
        const s = r.data?.run.status;
        return s === "success" || s === "failed" || s === "canceled" ? s : undefined;
      },
      180_000,
      "the run (six steps) to end",
    );
    expect(status).toBe("success");
    // ...and stays paused.
    expect((await pausedOf())["sales/orders"]).toBe(true);
  });

  it("tributary pause/resume go through the server when one answers", { timeout: cliBudget(3) }, async () => {
    const r = await runCli(["resume", "sales/orders", "--json", "--url", url()]);
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as PauseJson).assets).toMatchObject([
      { assetKey: "sales/orders", paused: false, pausedAt: null, changed: true },
    ]);
    const again = await runCli(["pause", "crm/profiles", "--url", url()]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^paused 1 asset\(s\)$/m);
    const bad = await runCli(["pause", "--group", "nope", "--url", url()]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/GROUP_UNKNOWN/);
    expect(await pausedOf()).toEqual({ "crm/profiles": true, "sales/orders": false, "sales/revenue": true });
  });

  it("tributary wipe goes through the server too: the partition the run made is missing again", { timeout: cliBudget(1) }, async () => {
    // The run of an earlier test materialised 2025-01-01 to 2025-01-03.
    const r = await runCli([
      "wipe",
      "sales/orders",
      "--partition",
      "2025-01-02",
      "--reason",
      "through the server",
      "--json",
      "--url",
      url(),
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      ok: true,
      assetKey: "sales/orders",
      partitionCount: 1,
      partitionKeys: ["2025-01-02"],
      statusesRemoved: 1,
      materializationsRemoved: 1,
      outputsRemoved: 1,
      objectsPending: [],
      dryRun: false,
    });
    const statuses = await gql<{ asset: { partitions: { nodes: { key: string; status: string }[] } } }>(
      `{ asset(key: "sales/orders") { partitions(from: "2025-01-01", to: "2025-01-03") { nodes { key status } } } }`,
    );
    expect(statuses.data!.asset.partitions.nodes.map((n) => `${n.key} ${n.status}`)).toEqual([
      "2025-01-01 MATERIALIZED",
      "2025-01-02 MISSING",
      "2025-01-03 MATERIALIZED",
    ]);
  });
});
