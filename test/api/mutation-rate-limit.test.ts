// The token buckets behind the mutation rate limit, on a clock the test moves.
import { describe, expect, it } from "vitest";
import { TokenBuckets } from "../../src/api/graphql/mutation-rate-limit.js";

describe("mutation token buckets", () => {
  it("admits a burst, refills at the rate, and says how long until enough tokens are back", () => {
    let now = 0;
    const buckets = new TokenBuckets({ perMinute: 60, burst: 30 }, () => now);
    expect(buckets.take("alice", 30)).toEqual({ ok: true });
    expect(buckets.take("alice", 1)).toEqual({ ok: false, retryAfterMs: 1_000 });
    expect(buckets.take("bob", 10)).toEqual({ ok: true });
    now += 5_000; // five tokens back
    expect(buckets.take("alice", 10)).toEqual({ ok: false, retryAfterMs: 5_000 });
    expect(buckets.take("alice", 5)).toEqual({ ok: true });
    now += 10 * 60_000; // never more than the burst
    expect(buckets.take("alice", 30)).toEqual({ ok: true });
    expect(buckets.take("alice", 31)).toEqual({ ok: false, retryAfterMs: Infinity });
  });

  it("forgets callers whose buckets refilled once it tracks many", () => {
    let now = 0;
    const buckets = new TokenBuckets({ perMinute: 60, burst: 2 }, () => now);
    for (let i = 0; i <= 10_000; i++) buckets.take(`caller-${i}`, 1);
    now += 2_000;
    buckets.take("late", 1);
    expect(buckets.size).toBe(1);
  });
});
