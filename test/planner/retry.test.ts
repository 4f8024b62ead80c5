import { describe, expect, it } from "vitest";
import type { RetryPolicySpec } from "../../src/index.js";
import { DEFAULT_MAX_RETRY_DELAY_MS, maxTries, retryDelayMs, shouldRetry } from "../../src/planner/index.js";

const policy = (overrides: Partial<RetryPolicySpec>): RetryPolicySpec => ({
  max: 3,
  delayMs: 1000,
  backoff: "fixed",
  maxDelayMs: null,
  jitter: false,
  ...overrides,
});
const never = (): number => {
  throw new Error("random() must not be called without jitter");
};

describe("retryDelayMs", () => {
  it("fixed: the delay every time", () => {
    expect([1, 2, 3, 10].map((n) => retryDelayMs(policy({}), n, never))).toEqual([1000, 1000, 1000, 1000]);
  });

  it("linear: n × the delay", () => {
    expect([1, 2, 3, 4].map((n) => retryDelayMs(policy({ backoff: "linear" }), n, never))).toEqual([1000, 2000, 3000, 4000]);
  });

  it("exponential: (2^n − 1) × the delay", () => {
    expect([1, 2, 3, 4].map((n) => retryDelayMs(policy({ backoff: "exponential" }), n, never))).toEqual([1000, 3000, 7000, 15000]);
  });

  it("caps at maxDelayMs", () => {
    const p = policy({ backoff: "exponential", maxDelayMs: 5000 });
    expect([1, 2, 3, 4].map((n) => retryDelayMs(p, n, never))).toEqual([1000, 3000, 5000, 5000]);
    expect(retryDelayMs(policy({ maxDelayMs: 500 }), 1, never)).toBe(500);
  });

  it("stops growing at 24 hours without maxDelayMs, even where 2^n overflows, but never cuts a fixed delay", () => {
    expect(retryDelayMs(policy({ backoff: "exponential" }), 40, never)).toBe(DEFAULT_MAX_RETRY_DELAY_MS);
    expect(retryDelayMs(policy({ backoff: "exponential" }), 5000, never)).toBe(DEFAULT_MAX_RETRY_DELAY_MS);
    expect(retryDelayMs(policy({ delayMs: 2 * DEFAULT_MAX_RETRY_DELAY_MS }), 3, never)).toBe(2 * DEFAULT_MAX_RETRY_DELAY_MS);
  });

  it("jitter spreads the capped delay over [0.5, 1] × itself", () => {
    const p = policy({ backoff: "exponential", maxDelayMs: 5000, jitter: true });
    expect(retryDelayMs(p, 2, () => 0)).toBe(1500);
    expect(retryDelayMs(p, 2, () => 0.5)).toBe(2250);
    expect(retryDelayMs(p, 2, () => 0.999999)).toBe(3000);
    expect(retryDelayMs(p, 5, () => 0.999999)).toBe(5000);
    for (let i = 0; i < 100; i++) {
      const r = i / 100;
      const delay = retryDelayMs(p, 3, () => r);
      expect(delay).toBeGreaterThanOrEqual(2500);
      expect(delay).toBeLessThanOrEqual(5000);
    }
  });

  it("rejects a try number below 1 and a bad random source", () => {
    expect(() => retryDelayMs(policy({}), 0, never)).toThrowError(/failed try number must be an integer >= 1/);
    expect(() => retryDelayMs(policy({ jitter: true }), 1, () => 2)).toThrowError(/random\(\) must return/);
  });
});

describe("shouldRetry", () => {
  it("allows max retries after the first try", () => {
    const p = policy({ max: 2 });
    expect([1, 2, 3, 4].map((n) => shouldRetry(p, n))).toEqual([true, true, false, false]);
    expect(shouldRetry(policy({ max: 0 }), 1)).toBe(false);
    expect(maxTries(p)).toBe(3);
  });

  it("counts retries from the last clearing, as the try number keeps counting", () => {
    const p = policy({ max: 1 });
    expect(shouldRetry(p, 3, 2)).toBe(true); // try 3 is the first after clearing at try 2
    expect(shouldRetry(p, 4, 2)).toBe(false);
    expect(maxTries(p, 2)).toBe(4);
  });
});
