// The infrastructure retry budget, as the environment gives it.
import { describe, expect, it } from "vitest";
import { resolveSettings } from "../../src/cli/settings.js";

const budget = (env: NodeJS.ProcessEnv) => resolveSettings({}, env).infrastructureRetry;

describe("infrastructure retry settings", () => {
  it("default to 5 re-runs, the first after 2 s, at most 1 min apart", () => {
    expect(budget({})).toEqual({ max: 5, delayMs: 2_000, maxDelayMs: 60_000 });
    // Empty is unset, as for every other variable.
    expect(budget({ TRIBUTARY_INFRASTRUCTURE_RETRIES: "" })).toEqual({ max: 5, delayMs: 2_000, maxDelayMs: 60_000 });
  });

  it("read a count and durations written as people write them", () => {
    expect(
      budget({
        TRIBUTARY_INFRASTRUCTURE_RETRIES: "10",
        TRIBUTARY_INFRASTRUCTURE_RETRY_DELAY: "500ms",
        TRIBUTARY_INFRASTRUCTURE_RETRY_MAX_DELAY: "5m",
      }),
    ).toEqual({ max: 10, delayMs: 500, maxDelayMs: 300_000 });
    expect(budget({ TRIBUTARY_INFRASTRUCTURE_RETRIES: "0", TRIBUTARY_INFRASTRUCTURE_RETRY_DELAY: "1500" })).toEqual({
      max: 0,
      delayMs: 1_500,
      maxDelayMs: 60_000,
    });
  });

  it("refuse a bad value, naming the variable and saying what to write", () => {
    const refused: [NodeJS.ProcessEnv, string][] = [
      [{ TRIBUTARY_INFRASTRUCTURE_RETRIES: "five" }, "environment variable TRIBUTARY_INFRASTRUCTURE_RETRIES: must be a whole number"],
      [{ TRIBUTARY_INFRASTRUCTURE_RETRIES: "-1" }, "environment variable TRIBUTARY_INFRASTRUCTURE_RETRIES: must be a whole number"],
      [{ TRIBUTARY_INFRASTRUCTURE_RETRIES: "5000" }, "environment variable TRIBUTARY_INFRASTRUCTURE_RETRIES: must be at most 1000"],
      [
        { TRIBUTARY_INFRASTRUCTURE_RETRY_DELAY: "soon" },
        'environment variable TRIBUTARY_INFRASTRUCTURE_RETRY_DELAY: "soon" is not a duration; write e.g. 2s, or a number of milliseconds',
      ],
      [
        { TRIBUTARY_INFRASTRUCTURE_RETRY_MAX_DELAY: "2d" },
        'environment variable TRIBUTARY_INFRASTRUCTURE_RETRY_MAX_DELAY: "2d" is more than a day',
      ],
      [
        { TRIBUTARY_INFRASTRUCTURE_RETRY_DELAY: "2m" },
        "environment variable TRIBUTARY_INFRASTRUCTURE_RETRY_MAX_DELAY (60000 ms, the default) is shorter than TRIBUTARY_INFRASTRUCTURE_RETRY_DELAY (120000 ms)",
      ],
    ];
    for (const [env, message] of refused) expect(() => budget(env), JSON.stringify(env)).toThrow(message);
  });
});
