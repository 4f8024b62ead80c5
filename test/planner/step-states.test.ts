import { describe, expect, it } from "vitest";
import {
  canTransition,
  deriveRunState,
  isTerminal,
  STEP_STATES,
  STEP_TRANSITIONS,
  TERMINAL_STEP_STATES,
  type StepState,
} from "../../src/planner/index.js";

describe("step states", () => {
  it("lists the twelve states and the terminal ones", () => {
    expect(STEP_STATES).toEqual([
      "pending",
      "scheduled",
      "queued",
      "running",
      "success",
      "failed",
      "skipped",
      "up_for_retry",
      "up_for_reschedule",
      "deferred",
      "upstream_failed",
      "removed",
    ]);
    expect(STEP_STATES.filter(isTerminal)).toEqual(["success", "failed", "skipped", "upstream_failed", "removed"]);
    expect([...TERMINAL_STEP_STATES].sort()).toEqual(STEP_STATES.filter(isTerminal).sort());
  });

  it("follows the step lifecycle", () => {
    const path: StepState[] = [
      "pending",
      "scheduled",
      "queued",
      "running",
      "up_for_retry",
      "scheduled",
      "queued",
      "running",
      "deferred",
      "scheduled",
      "queued",
      "running",
      "success",
    ];
    for (let i = 1; i < path.length; i++) expect(canTransition(path[i - 1]!, path[i]!), `${path[i - 1]} → ${path[i]}`).toBe(true);
    for (const to of ["success", "failed", "skipped", "up_for_retry", "up_for_reschedule", "deferred"] as const)
      expect(canTransition("running", to)).toBe(true);
    expect(canTransition("up_for_reschedule", "scheduled")).toBe(true);
    expect(canTransition("pending", "upstream_failed")).toBe(true);
    expect(canTransition("pending", "skipped")).toBe(true);
  });

  it("moves a terminal step only back to pending (clearing)", () => {
    for (const from of TERMINAL_STEP_STATES) {
      for (const to of STEP_STATES) expect(canTransition(from, to), `${from} → ${to}`).toBe(to === "pending");
    }
  });

  it("forbids skipping stages and staying put", () => {
    expect(canTransition("pending", "running")).toBe(false);
    expect(canTransition("pending", "queued")).toBe(false);
    expect(canTransition("scheduled", "running")).toBe(false);
    expect(canTransition("queued", "success")).toBe(false);
    expect(canTransition("up_for_retry", "running")).toBe(false);
    expect(canTransition("deferred", "running")).toBe(false);
    for (const s of STEP_STATES) expect(canTransition(s, s)).toBe(false);
  });

  it("lets every unfinished step be removed or skipped, and fail once a try was handed out", () => {
    for (const from of STEP_STATES.filter((s) => !isTerminal(s))) {
      expect(canTransition(from, "removed")).toBe(true);
      expect(canTransition(from, "skipped")).toBe(true);
      expect(canTransition(from, "failed"), from).toBe(from !== "pending" && from !== "scheduled");
    }
  });

  it("has a row for every state, naming only known states", () => {
    expect(Object.keys(STEP_TRANSITIONS).sort()).toEqual([...STEP_STATES].sort());
    for (const targets of Object.values(STEP_TRANSITIONS)) for (const t of targets) expect(STEP_STATES).toContain(t);
  });
});

describe("deriveRunState", () => {
  it("is running while any step is unfinished", () => {
    expect(deriveRunState({ success: 3, running: 1 })).toBe("running");
    expect(deriveRunState({ failed: 2, pending: 1 })).toBe("running");
    expect(deriveRunState({ success: 1, up_for_retry: 1 })).toBe("running");
    expect(deriveRunState({ success: 1, deferred: 1 })).toBe("running");
  });

  it("succeeds when every step ended and none failed; skipped is fine, removed ignored", () => {
    expect(deriveRunState({ success: 3 })).toBe("success");
    expect(deriveRunState({ success: 2, skipped: 4, removed: 1 })).toBe("success");
    expect(deriveRunState({ skipped: 1 })).toBe("success");
    expect(deriveRunState({ removed: 2 })).toBe("success");
    expect(deriveRunState({})).toBe("success");
    expect(deriveRunState({ success: 1, running: 0 })).toBe("success");
  });

  it("fails when every step ended and any failed or was upstream_failed", () => {
    expect(deriveRunState({ success: 3, failed: 1 })).toBe("failed");
    expect(deriveRunState({ success: 3, upstream_failed: 1, skipped: 2 })).toBe("failed");
  });

  it("rejects unknown states and bad counts", () => {
    expect(() => deriveRunState({ done: 1 } as never)).toThrowError(/unknown step state "done"/);
    expect(() => deriveRunState({ success: -1 })).toThrowError(/non-negative integer/);
  });
});
