import { afterAll, beforeAll, expect, it } from "vitest";
import { LATER, seedTriggers, startApiServer, type ApiServer, type SeededTriggers, type TriggerName } from "../api/triggers-seed.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { runCli } from "./run-cli.js";

// `tributary triggers` and the deferred-step line of `tributary run`, in this process (no server at --url) and through a server.
type TriggersJson = { ok: boolean; counts: Record<string, number>; triggers: Record<string, unknown>[]; hasMore: boolean };
type RunJson = { run: { steps: { assetKey: string; partitionKey: string; state: string; waitingFor: Record<string, unknown> | null }[] } };

const NO_SERVER = "http://127.0.0.1:9";

describePostgres("tributary triggers / run", () => {
  const database = useTestDatabase();
  let seeded: SeededTriggers;
  let server: ApiServer;

  const cli = (args: string[], url = NO_SERVER) =>
    runCli([...args, "--url", url, "--definitions", server.definitionsDir], { env: { DATABASE_URL: database.url } });
  const serverUrl = () => server.url;

  async function json<T>(args: string[], url?: string): Promise<T> {
    const r = await cli([...args, "--json"], url);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as T;
  }

  const idsOf = (...names: TriggerName[]) => names.map((n) => seeded.ids[n]);

  beforeAll(async () => {
    seeded = await seedTriggers(database.db);
    server = await startApiServer(database.url);
  }, 90_000);

  afterAll(() => server?.stop());

  it("--json: counts by status and the triggers, waiting first; the same in this process and through the server", async () => {
    const local = await json<TriggersJson>(["triggers"]);
    expect(local.counts).toEqual({ waiting: 4, fired: 3, failed: 0, timed_out: 1, canceled: 1 });
    expect(local.triggers.map((t) => t.id)).toEqual(
      idsOf("api", "feed01", "second", "first", "feed26", "feed27", "feed28", "report", "olderFirst"),
    );
    expect(local.hasMore).toBe(false);
    expect(local.triggers.find((t) => t.id === seeded.ids.first)).toMatchObject({
      kind: "fileExists",
      args: { path: "/in/{partition}.csv" },
      status: "waiting",
      stepId: seeded.steps.first,
      runId: seeded.runId,
      assetKey: "feed/clean",
      partitionKey: "2025-03-01",
      partitionWindow: { start: "2025-03-01T00:00:00.000Z", end: "2025-03-02T00:00:00.000Z" },
      attempts: 3,
      timeoutAt: LATER.toISOString(),
      lastResult: { detail: "/in/2025-03-01.csv does not exist" },
    });
    expect(await json<TriggersJson>(["triggers"], serverUrl())).toEqual(local);
  });

  it("filters by --status, --asset and --kind, and says when there is more than --limit", async () => {
    const waitingFeed = await json<TriggersJson>(["triggers", "--status", "waiting", "--asset", "partner/feed"]);
    expect(waitingFeed.triggers.map((t) => t.id)).toEqual(idsOf("feed01"));
    // The counts follow --asset and --kind, not --status: the summary shows the other statuses too.
    expect(waitingFeed.counts).toEqual({ waiting: 1, fired: 1, failed: 0, timed_out: 1, canceled: 1 });
    expect((await json<TriggersJson>(["triggers", "--kind", "httpOk"], serverUrl())).triggers.map((t) => t.id)).toEqual(idsOf("api"));
    expect((await json<TriggersJson>(["triggers", "--asset", "feed/clean", "--limit", "2"])).hasMore).toBe(true);
  });

  it("prints a summary and a table: rendered templates, whom each waits for, checks, last result", async () => {
    const r = await cli(["triggers"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^4 waiting, 3 fired, 0 failed, 1 timed out, 1 canceled$/m);
    expect(r.stdout).toMatch(
      new RegExp(
        `^${seeded.ids.first}\\s+fileExists\\(/in/2025-03-01\\.csv\\)\\s+step ${seeded.steps.first} \\(feed/clean 2025-03-01\\)\\s+waiting\\s+3\\s+` +
          `2025-03-01T06:00:00\\.000Z\\s+in \\d+ min\\s+2099-01-01T00:00:00\\.000Z\\s+/in/2025-03-01\\.csv does not exist$`,
        "m",
      ),
    );
    // {start} without a stored window cannot be rendered: shown as written.
    expect(r.stdout).toMatch(
      new RegExp(`^${seeded.ids.second}\\s+fileExists\\(/in/\\{start\\}\\.csv\\)\\s+step ${seeded.steps.second} `, "m"),
    );
    expect(r.stdout).toMatch(
      new RegExp(
        `^${seeded.ids.api}\\s+httpOk\\(url=http://partner\\.example/ready, status=200\\)\\s+partner/api\\s+waiting\\s+2\\s.*error: connect ECONNREFUSED`,
        "m",
      ),
    );
    expect(r.stdout).toMatch(
      new RegExp(
        `^${seeded.ids.feed27}\\s+fileExists\\(/partner/2025-02-27/_SUCCESS\\)\\s+partner/feed 2025-02-27\\s+timed_out\\s+9\\s`,
        "m",
      ),
    );
    const more = await cli(["triggers", "--status", "fired", "--limit", "2"], serverUrl());
    expect(more.stdout).toMatch(/^more than 2: narrow with --status\/--asset\/--kind or raise --limit$/m);
  });

  it("run <id>: a deferred step says what it waits for, how often it was checked, the next check and the timeout", async () => {
    const r = await cli(["run", seeded.runId], serverUrl());
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /^feed\/clean 2025-03-01: deferred — waiting on fileExists\(\/in\/2025-03-01\.csv\), checked 3×, next in \d+ min, times out 2099-01-01T00:00:00\.000Z$/m,
    );
    expect(r.stdout).toMatch(
      /^feed\/clean 2025-03-02: deferred — waiting on fileExists\(\/in\/\{start\}\.csv\), not checked yet, next in \d+ d, times out 2099-01-01T00:00:00\.000Z$/m,
    );
    // The resumed step's fired trigger is in --json, not in the text.
    expect(r.stdout).not.toMatch(/^feed\/report.*deferred —/m);
    const local = await json<RunJson>(["run", seeded.runId]);
    const remote = await json<RunJson>(["run", seeded.runId], serverUrl());
    const waits = (run: RunJson) => Object.fromEntries(run.run.steps.map((s) => [`${s.assetKey} ${s.partitionKey}`, s.waitingFor]));
    expect(waits(remote)).toEqual(waits(local));
    expect(waits(local)).toMatchObject({
      "feed/clean 2025-03-01": { id: seeded.ids.first, status: "waiting", attempts: 3 },
      "feed/clean 2025-03-02": { id: seeded.ids.second, status: "waiting", attempts: 0 },
      "feed/report ": { id: seeded.ids.report, status: "fired", payload: { eventId: 7 }, nextCheckAt: null },
    });
  });

  it("rejects bad options with INPUT_INVALID naming the option, before opening anything", async () => {
    const cases: [string[], RegExp][] = [
      [
        ["--status", "sleeping"],
        /INPUT_INVALID.*--status: "sleeping" is not a trigger status; use one of waiting, fired, failed, timed_out, canceled/,
      ],
      [["--limit", "ten"], /INPUT_INVALID.*--limit: "ten" must be a whole number from 1 to 500/],
      [["--asset", "", "--json"], /^$/],
    ];
    const results = await Promise.all(cases.map(([args]) => cli(["triggers", ...args])));
    results.forEach((r, i) => {
      expect(r.code, cases[i]![0].join(" ")).toBe(1);
      expect(r.stderr).toMatch(cases[i]![1]);
    });
    expect(JSON.parse(results[2]!.stdout)).toMatchObject({
      ok: false,
      error: { code: "INPUT_INVALID", message: "--asset: must not be empty; leave it out to see all" },
    });
  });
});
