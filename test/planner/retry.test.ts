import { describe, expect, it } from "vitest";
import type { RetryPolicySpec } from "../../src/index.js";
import {
  decideRetry,
  DEFAULT_INFRASTRUCTURE_RETRY_POLICY,
  DEFAULT_MAX_RETRY_DELAY_MS,
  maxTries,
  retryDelayMs,
  runDecisions,
  shouldRetry,
  type FailedTry,
  type InfrastructureRetryPolicy,
} from "../../src/planner/index.js";

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

describe("decideRetry", () => {
  const infra: InfrastructureRetryPolicy = { max: 3, delayMs: 2000, maxDelayMs: 10_000 };
  const failed = (overrides: Partial<FailedTry>): FailedTry => ({
    tryNumber: 1,
    failureClass: "user",
    retryable: true,
    policy: policy({ max: 0 }),
    triesBefore: 0,
    infrastructureFailures: 0,
    canceled: false,
    ...overrides,
  });
  const top = () => 1; // jitter keeps the whole delay

  it("re-runs an infrastructure failure of a step with no retries, on the infrastructure budget", () => {
    expect(decideRetry(failed({ failureClass: "infrastructure" }), infra, top)).toEqual({
      retry: true,
      delayMs: 2000,
      budget: "infrastructure",
    });
  });

  it("backs infrastructure re-runs off exponentially, jittered, up to the cap", () => {
    const delays = [0, 1, 2].map((n) => decideRetry(failed({ failureClass: "infrastructure", infrastructureFailures: n }), infra, top));
    expect(delays.map((d) => (d.retry ? d.delayMs : null))).toEqual([2000, 6000, 10_000]);
    const low = decideRetry(failed({ failureClass: "infrastructure", infrastructureFailures: 1 }), infra, () => 0);
    expect(low).toEqual({ retry: true, delayMs: 3000, budget: "infrastructure" });
  });

  it("fails an infrastructure failure once the budget is spent, saying how large it was", () => {
    expect(decideRetry(failed({ failureClass: "infrastructure", infrastructureFailures: 3 }), infra, top)).toEqual({
      retry: false,
      why: "infrastructure_retries_spent",
      max: 3,
    });
    expect(decideRetry(failed({ failureClass: "infrastructure" }), { ...infra, max: 0 }, top)).toMatchObject({
      retry: false,
      why: "infrastructure_retries_spent",
    });
  });

  it("governs a user failure by the asset's retries alone, however many infrastructure failures came before", () => {
    // retries: 1. Try 1 was lost to infrastructure (re-run, so it does not count: triesBefore 1); try 2 is the
    // user's first failure and gets its retry; try 3 is the user's second and is final.
    const p = policy({ max: 1, delayMs: 500 });
    expect(decideRetry(failed({ policy: p, tryNumber: 2, triesBefore: 1, infrastructureFailures: 1 }), infra, top)).toEqual({
      retry: true,
      delayMs: 500,
      budget: "user",
    });
    expect(decideRetry(failed({ policy: p, tryNumber: 3, triesBefore: 1, infrastructureFailures: 1 }), infra, top)).toEqual({
      retry: false,
      why: "retries_spent",
    });
    // Its backoff counts the user's failures only: the second user failure waits as a second.
    const growing = policy({ max: 3, delayMs: 1000, backoff: "exponential" });
    expect(decideRetry(failed({ policy: growing, tryNumber: 4, triesBefore: 2 }), infra, top)).toMatchObject({ delayMs: 3000 });
    // A spent infrastructure budget does not touch the user's.
    expect(decideRetry(failed({ policy: p, tryNumber: 7, triesBefore: 6, infrastructureFailures: 6 }), infra, top)).toMatchObject({
      retry: true,
      budget: "user",
    });
  });

  it("never re-runs a canceled run's step or a failure that is not retryable, whatever its class", () => {
    for (const failureClass of ["user", "infrastructure"] as const) {
      expect(decideRetry(failed({ failureClass, canceled: true }), infra, top)).toEqual({ retry: false, why: "canceled" });
      expect(decideRetry(failed({ failureClass, retryable: false }), infra, top)).toEqual({ retry: false, why: "not_retryable" });
    }
  });

  it("fails a user failure of a step without a retry policy (a check's step)", () => {
    expect(decideRetry(failed({ policy: null }), infra, top)).toEqual({ retry: false, why: "retries_spent" });
    expect(decideRetry(failed({ policy: null, failureClass: "infrastructure" }), infra, top)).toMatchObject({ retry: true });
  });

  it("runDecisions takes the infrastructure policy, defaulting to 5 re-runs from 2 s up to 1 min, and refuses a bad one", () => {
    expect(DEFAULT_INFRASTRUCTURE_RETRY_POLICY).toEqual({ max: 5, delayMs: 2000, maxDelayMs: 60_000 });
    const fifth = failed({ failureClass: "infrastructure", infrastructureFailures: 4 });
    expect(runDecisions().retry(fifth, top)).toEqual({ retry: true, delayMs: 60_000, budget: "infrastructure" });
    expect(runDecisions({ max: 1, delayMs: 10, maxDelayMs: 10 }).retry(fifth, top)).toMatchObject({ retry: false });
    expect(() => runDecisions({ max: -1, delayMs: 0, maxDelayMs: 0 })).toThrowError(/max must be a whole number >= 0/);
    expect(() => runDecisions({ max: 1, delayMs: 5000, maxDelayMs: 1000 })).toThrowError(/maxDelayMs must be .* no smaller than delayMs/);
  });
});
