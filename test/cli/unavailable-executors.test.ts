import { describe, expect, it } from "vitest";
import { unavailableExecutors } from "../../src/cli/runtime.js";

// Which executors a launch is refused for: those no process would run.
describe("unavailableExecutors", () => {
  const postgres = "postgres://db/tributary";

  it("refuses bullmq where this process runs steps without Redis, on either database", () => {
    expect([...unavailableExecutors({ redisUrl: undefined, databaseUrl: undefined }, {}).keys()]).toEqual(["bullmq"]);
    expect([...unavailableExecutors({ redisUrl: undefined, databaseUrl: postgres }, {}).keys()]).toEqual(["bullmq"]);
    expect(unavailableExecutors({ redisUrl: undefined, databaseUrl: undefined }, {}).get("bullmq")).toMatch(
      /no Redis is configured; set REDIS_URL/,
    );
  });

  it("refuses nothing with Redis", () => {
    expect(unavailableExecutors({ redisUrl: "redis://127.0.0.1:6379", databaseUrl: undefined }, {}).size).toBe(0);
    expect(unavailableExecutors({ redisUrl: "redis://127.0.0.1:6379", databaseUrl: postgres }, { runsSteps: false }).size).toBe(0);
  });

  it("leaves bullmq to the reconcilers when this process only serves the API on Postgres", () => {
    expect(unavailableExecutors({ redisUrl: undefined, databaseUrl: postgres }, { runsSteps: false }).size).toBe(0);
    // On the embedded database the API's process is the only one there is.
    expect([...unavailableExecutors({ redisUrl: undefined, databaseUrl: undefined }, { runsSteps: false }).keys()]).toEqual(["bullmq"]);
  });
});
