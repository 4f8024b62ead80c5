import { afterEach, describe, expect, it } from "vitest";
import { backoffDelayMs, DependencyHealth, isConnectionError, isConnectionErrorText, logOutagesOnce } from "../../src/health/index.js";

describe("backoffDelayMs", () => {
  it("doubles from the initial delay up to the cap, never below half of each step", () => {
    const policy = { initialMs: 250, maxMs: 5_000 };
    expect([0, 1, 2, 3, 4, 5, 10, 1_000].map((n) => backoffDelayMs(n, policy, () => 1))).toEqual([
      250, 500, 1000, 2000, 4000, 5000, 5000, 5000,
    ]);
    expect([0, 4, 10].map((n) => backoffDelayMs(n, policy, () => 0))).toEqual([125, 2000, 2500]);
  });
});

describe("isConnectionError", () => {
  it("tells a dependency that is away from one that answered with a refusal", () => {
    expect(isConnectionError(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }))).toBe(true);
    expect(isConnectionError(Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" }))).toBe(
      true,
    );
    expect(isConnectionError(new Error("Connection terminated unexpectedly"))).toBe(true);
    expect(isConnectionError(new Error("wrapped", { cause: Object.assign(new Error("x"), { code: "ECONNRESET" }) }))).toBe(true);
    expect(isConnectionError(new AggregateError([Object.assign(new Error("a"), { code: "ECONNREFUSED" })]))).toBe(true);
    expect(isConnectionError(Object.assign(new Error('relation "nope" does not exist'), { code: "42P01" }))).toBe(false);
    expect(isConnectionError(Object.assign(new Error("duplicate key"), { code: "23505" }))).toBe(false);
    expect(isConnectionError("a string")).toBe(false);
    expect(isConnectionErrorText("alerts: definitions files: Error: connect ECONNREFUSED 127.0.0.1:5432")).toBe(true);
    expect(isConnectionErrorText("backfill 3: run 9 of chunk 2 no longer exists")).toBe(false);
  });
});

describe("DependencyHealth", () => {
  let health: DependencyHealth | undefined;
  afterEach(() => health?.close());

  it("logs an outage once however often it fails, probes until the dependency answers, then says how long it was away", async () => {
    const lines: string[] = [];
    let answers = false;
    let probes = 0;
    health = new DependencyHealth({ log: (level, m) => lines.push(`${level} ${m}`), backoff: { initialMs: 5, maxMs: 20 } });
    health.register("postgres", async () => {
      probes++;
      if (!answers) throw new Error("still down");
    });
    for (let i = 0; i < 10; i++) health.failed("postgres", new Error("connect ECONNREFUSED 127.0.0.1:5432"));
    expect(health.isUp("postgres")).toBe(false);
    expect(lines).toEqual(["warn postgres is unreachable (connect ECONNREFUSED 127.0.0.1:5432); retrying until it answers"]);
    await until(() => probes >= 3);
    expect(health.states()[0]).toMatchObject({ name: "postgres", up: false, error: "still down", outages: 1 });
    answers = true;
    await until(() => health!.isUp("postgres"));
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/^info postgres answers again after \d+\.\d s away$/);
    // A second outage is a second line, and counted.
    health.failed("postgres", new Error("Connection terminated unexpectedly"));
    expect(lines).toHaveLength(3);
    expect(health.states()[0]?.outages).toBe(2);
  });

  it("routes text that says the dependency is away to the health view, and every other line to the log", () => {
    const lines: string[] = [];
    health = new DependencyHealth({ log: (level, m) => lines.push(`health ${level} ${m}`) });
    const log = logOutagesOnce(health, "postgres", (level: "info" | "warn" | "error", m: string) => lines.push(`${level} ${m}`));
    log("error", "reconciler task alerts failed: Error: connect ECONNREFUSED 127.0.0.1:5432\n    at stack");
    log("warn", "automation could not create a run for a @ 1: Connection terminated unexpectedly");
    log("warn", "backfill 3: run 9 of chunk 2 no longer exists");
    log("info", "connect ECONNREFUSED in an info line stays");
    expect(lines).toEqual([
      "health warn postgres is unreachable (reconciler task alerts failed: Error: connect ECONNREFUSED 127.0.0.1:5432); retrying until it answers",
      "warn backfill 3: run 9 of chunk 2 no longer exists",
      "info connect ECONNREFUSED in an info line stays",
    ]);
  });
});

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setTimeout(r, 5));
}
