import { describe, expect, it } from "vitest";
import { InputError, type TriggerRule } from "../../src/index.js";
import { countUpstreamStates, evaluateTriggerRule, type TriggerDecision, type UpstreamCounts } from "../../src/planner/index.js";
import { TRIGGER_RULES } from "../../src/sdk/index.js";

/** `"s2 f1 u0 k0 r0 /4"`: success, failed, upstream_failed, skipped (k), removed, of total; omitted fields are 0. */
function counts(text: string): UpstreamCounts {
  const [fields, total] = text.split("/");
  const get = (letter: string) => Number(new RegExp(`${letter}(\\d+)`).exec(fields!)?.[1] ?? 0);
  return { total: Number(total), success: get("s"), failed: get("f"), upstreamFailed: get("u"), skipped: get("k"), removed: get("r") };
}

// [upstream states, decision]; `/3` alone: three upstreams, none finished.
const TABLE: Record<TriggerRule, [string, TriggerDecision][]> = {
  all_success: [
    ["/3", "wait"],
    ["s2 /3", "wait"],
    ["s3 /3", "run"],
    ["f1 /3", "upstream_failed"], // early: the others still run
    ["u1 /3", "upstream_failed"],
    ["s2 f1 /3", "upstream_failed"],
    ["k1 /3", "skipped"], // skips propagate, early
    ["s2 k1 /3", "skipped"],
    ["f1 k1 /3", "upstream_failed"], // a failure wins over a skip
    ["s2 r1 /3", "run"], // removed upstreams do not count
  ],
  all_failed: [
    ["/3", "wait"],
    ["f2 /3", "wait"],
    ["f2 u1 /3", "run"],
    ["f3 /3", "run"],
    ["u3 /3", "run"],
    ["f1 s1 /3", "skipped"], // early
    ["k1 /3", "skipped"],
    ["f2 r1 /3", "run"],
  ],
  all_done: [
    ["/3", "wait"],
    ["s1 f1 /3", "wait"],
    ["s1 f1 k1 /3", "run"],
    ["u3 /3", "run"],
    ["k3 /3", "run"],
    ["s2 r1 /3", "run"],
  ],
  all_skipped: [
    ["/3", "wait"],
    ["k2 /3", "wait"],
    ["k3 /3", "run"],
    ["s1 /3", "skipped"], // early
    ["f1 /3", "skipped"],
    ["u1 k2 /3", "skipped"],
    ["k2 r1 /3", "run"],
  ],
  one_success: [
    ["/3", "wait"],
    ["f2 /3", "wait"],
    ["s1 /3", "run"], // early: the others still run
    ["f1 s1 /3", "run"],
    ["f2 u1 /3", "upstream_failed"],
    ["k2 f1 /3", "upstream_failed"],
    ["k3 /3", "skipped"], // every upstream skipped
    ["k2 r1 /3", "skipped"],
  ],
  one_failed: [
    ["/3", "wait"],
    ["s2 /3", "wait"],
    ["f1 /3", "run"], // early
    ["u1 /3", "run"],
    ["s3 /3", "skipped"],
    ["k3 /3", "skipped"],
    ["s2 k1 /3", "skipped"],
  ],
  one_done: [
    ["/3", "wait"],
    ["k2 /3", "wait"],
    ["u2 /3", "wait"],
    ["s1 /3", "run"], // early
    ["f1 /3", "run"],
    ["u3 /3", "skipped"], // upstream_failed is neither a success nor a failure here
    ["k3 /3", "skipped"],
    ["u2 k1 /3", "skipped"],
  ],
  none_failed: [
    ["/3", "wait"],
    ["s2 /3", "wait"],
    ["s2 k1 /3", "run"],
    ["k3 /3", "run"], // all skipped still runs
    ["f1 /3", "upstream_failed"], // early
    ["u1 k1 /3", "upstream_failed"],
  ],
  none_failed_min_one_success: [
    ["/3", "wait"],
    ["s1 k1 /3", "wait"],
    ["k2 /3", "wait"],
    ["s1 k2 /3", "run"],
    ["s3 /3", "run"],
    ["k3 /3", "skipped"], // no success at all
    ["f1 /3", "upstream_failed"], // early
    ["u1 k2 /3", "upstream_failed"],
  ],
  none_skipped: [
    ["/3", "wait"],
    ["s2 /3", "wait"],
    ["s3 /3", "run"],
    ["s1 f1 u1 /3", "run"], // failures are fine
    ["k1 /3", "skipped"], // early
    ["s2 k1 /3", "skipped"],
  ],
  always: [
    ["/3", "run"], // does not wait for anything
    ["f3 /3", "run"],
    ["k3 /3", "run"],
    ["u2 /3", "run"],
  ],
};

/**
 * Airflow's `_evaluate_direct_relatives` transcribed literally for
 * unmapped tasks with flag_upstream_failed=True: first the state change,
 * then the pass check. An independent reference for the implementation.
 */
function airflowReference(rule: TriggerRule, c: UpstreamCounts): TriggerDecision {
  const upstream = c.total;
  const { success, skipped, failed, upstreamFailed: upstream_failed } = c;
  const done = success + skipped + failed + upstream_failed;
  const upstream_done = done >= upstream;
  if (upstream === 0 || rule === "always") return "run";
  let newState: TriggerDecision | undefined;
  if (rule === "all_success") {
    if (upstream_failed || failed) newState = "upstream_failed";
    else if (skipped) newState = "skipped";
  } else if (rule === "all_failed") {
    if (success || skipped) newState = "skipped";
  } else if (rule === "one_success") {
    if (upstream_done && done === skipped) newState = "skipped";
    else if (upstream_done && success <= 0) newState = "upstream_failed";
  } else if (rule === "one_failed") {
    if (upstream_done && !(failed || upstream_failed)) newState = "skipped";
  } else if (rule === "one_done") {
    if (upstream_done && !(failed || success)) newState = "skipped";
  } else if (rule === "none_failed") {
    if (upstream_failed || failed) newState = "upstream_failed";
  } else if (rule === "none_failed_min_one_success") {
    if (upstream_failed || failed) newState = "upstream_failed";
    else if (skipped === upstream) newState = "skipped";
  } else if (rule === "none_skipped") {
    if (skipped) newState = "skipped";
  } else if (rule === "all_skipped") {
    if (success || failed || upstream_failed) newState = "skipped";
  }
  if (newState) return newState;
  let passed: boolean;
  switch (rule) {
    case "one_success":
      passed = success > 0;
      break;
    case "one_failed":
      passed = failed > 0 || upstream_failed > 0;
      break;
    case "one_done":
      passed = success + failed > 0;
      break;
    case "all_success":
      passed = upstream - success <= 0;
      break;
    case "all_failed":
      passed = upstream - failed - upstream_failed <= 0;
      break;
    case "all_done":
      passed = upstream_done;
      break;
    case "none_failed":
    case "none_failed_min_one_success":
      passed = upstream - success - skipped <= 0;
      break;
    case "none_skipped":
      passed = upstream_done && skipped === 0;
      break;
    case "all_skipped":
      passed = upstream - skipped <= 0;
      break;
    default:
      passed = true;
  }
  return passed ? "run" : "wait";
}

/** Every way to spread up to `total` finished upstreams over the four end states. */
function* allCounts(maxTotal: number): Generator<UpstreamCounts> {
  for (let total = 0; total <= maxTotal; total++)
    for (let s = 0; s <= total; s++)
      for (let f = 0; s + f <= total; f++)
        for (let u = 0; s + f + u <= total; u++)
          for (let k = 0; s + f + u + k <= total; k++) yield { total, success: s, failed: f, upstreamFailed: u, skipped: k, removed: 0 };
}

describe("evaluateTriggerRule", () => {
  it("covers every rule", () => {
    expect(Object.keys(TABLE).sort()).toEqual([...TRIGGER_RULES].sort());
  });

  for (const rule of TRIGGER_RULES) {
    it.each(TABLE[rule])(`${rule}: %s → %s`, (text, expected) => {
      expect(evaluateTriggerRule(rule, counts(text))).toBe(expected);
    });
  }

  it("runs a step without upstreams, or whose upstreams were all removed, under every rule", () => {
    for (const rule of TRIGGER_RULES) {
      expect(evaluateTriggerRule(rule, counts("/0"))).toBe("run");
      expect(evaluateTriggerRule(rule, counts("r2 /2"))).toBe("run");
    }
  });

  it("agrees with Airflow's trigger_rule_dep on every combination of up to 5 upstreams", () => {
    let checked = 0;
    for (const rule of TRIGGER_RULES) {
      for (const c of allCounts(5)) {
        expect([rule, c, evaluateTriggerRule(rule, c)]).toEqual([rule, c, airflowReference(rule, c)]);
        checked++;
      }
    }
    expect(checked).toBe(11 * 252);
  });

  it("treats removed upstreams as absent", () => {
    for (const rule of TRIGGER_RULES) {
      for (const c of allCounts(4)) {
        const withRemoved = { ...c, total: c.total + 2, removed: 2 };
        expect(evaluateTriggerRule(rule, withRemoved)).toBe(evaluateTriggerRule(rule, c));
      }
    }
  });

  it("decides every rule once all upstreams are done", () => {
    for (const rule of TRIGGER_RULES) {
      for (const c of allCounts(4)) {
        if (c.success + c.failed + c.upstreamFailed + c.skipped === c.total) expect(evaluateTriggerRule(rule, c)).not.toBe("wait");
      }
    }
  });

  it("rejects impossible counts", () => {
    expect(() => evaluateTriggerRule("all_success", counts("s3 f1 /3"))).toThrowError(InputError);
    expect(() => evaluateTriggerRule("all_success", { ...counts("/3"), failed: -1 })).toThrowError(
      /"failed" must be a non-negative integer/,
    );
    expect(() => evaluateTriggerRule("all_success", { ...counts("/3"), total: 1.5 })).toThrowError(/"total"/);
  });
});

describe("countUpstreamStates", () => {
  it("counts terminal states and leaves unfinished ones out", () => {
    expect(
      countUpstreamStates(["success", "running", "failed", "skipped", "upstream_failed", "removed", "up_for_retry", "success"]),
    ).toEqual({
      total: 8,
      success: 2,
      failed: 1,
      upstreamFailed: 1,
      skipped: 1,
      removed: 1,
    });
  });
});
