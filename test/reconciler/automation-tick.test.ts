import { describe, expect, it } from "vitest";
import {
  allOf,
  anyOf,
  asset,
  check,
  codeVersionChanged,
  cronTickPassed,
  daily,
  dep,
  eager,
  hasFailed,
  hourly,
  isMissing,
  not,
  onCron,
  onMissing,
  timeWindow,
  upstreamsReady,
} from "../../src/index.js";
import { AssetGraph } from "../../src/graph/index.js";
import { graphOf, noop } from "../planner/helpers.js";
import { AutomationWorld } from "./automation-helpers.js";

const days = daily({ start: "2025-03-01" });

describe("onCron", () => {
  const raw = asset({ key: "s/raw", partitions: days }, noop);
  const report = asset({ key: "s/report", partitions: days, automation: onCron("0 1 * * *"), deps: { raw: dep(raw) } }, noop);

  it("requests the latest due partition once the tick passed and upstreams are there, once per tick", () => {
    const w = new AutomationWorld(graphOf(raw, report)).set("s/raw", { materialized: ["2025-03-01", "2025-03-02", "2025-03-03"] });
    w.tick("2025-03-04T01:30:00Z");
    expect(w.requested()).toEqual(["s/report@2025-03-03"]);
    const rec = w.last!.records.find((r) => r.decision === "requested")!;
    expect(rec.reasons[0]).toMatchObject({ operand: "cron_tick", tick: "2025-03-04T01:00:00.000Z" });
    // Same tick, later evaluation: nothing new.
    w.set("s/report", { inProgress: ["2025-03-03"] });
    expect(w.requested(w.tick("2025-03-04T01:31:00Z"))).toEqual([]);
    // Next day's tick.
    w.set("s/report", { inProgress: [], materialized: ["2025-03-03"] }).set("s/raw", {
      materialized: ["2025-03-01", "2025-03-02", "2025-03-03", "2025-03-04"],
    });
    w.tick("2025-03-05T00:59:00Z");
    expect(w.requested()).toEqual([]);
    w.tick("2025-03-05T01:00:30Z");
    expect(w.requested()).toEqual(["s/report@2025-03-04"]);
  });

  it("waits for upstreams after the tick, with the reason recorded, and requests once they are there", () => {
    const w = new AutomationWorld(graphOf(raw, report)).set("s/raw", { materialized: ["2025-03-01", "2025-03-02"] });
    w.tick("2025-03-04T01:30:00Z");
    expect(w.requested()).toEqual([]);
    const declined = w.last!.records.find((r) => r.decision === "declined")!;
    expect(declined.partitions).toEqual([["2025-03-03", "2025-03-03"]]);
    expect(declined.reasons.map((r) => r.operand)).toEqual(["cron_tick", "upstreams_not_ready"]);
    expect(declined.reasons[1]!.detail).toContain('waiting for upstream "s/raw"');
    expect(declined.reasons[1]!.detail).toContain('"2025-03-03"');
    // No new tick, but the owed partition is requested once raw lands.
    w.tick("2025-03-04T01:31:00Z");
    expect(w.last!.records).toEqual([]); // unchanged decision: nothing stored
    w.set("s/raw", { materialized: ["2025-03-01", "2025-03-02", "2025-03-03"] });
    w.tick("2025-03-04T05:00:00Z");
    expect(w.requested()).toEqual(["s/report@2025-03-03"]);
  });

  it("fires a 02:30 Berlin cron once on the spring-forward day and once on the fall-back day", () => {
    const berlin = daily({ start: "2025-03-01", timezone: "Europe/Berlin" });
    const a = asset({ key: "s/berlin", partitions: berlin, automation: onCron("30 2 * * *", { timezone: "Europe/Berlin" }) }, noop);
    const w = new AutomationWorld(graphOf(a));
    const requested: string[] = [];
    // Every 10 minutes through 2025-03-29 22:00Z .. 2025-03-31 02:00Z, marking requests in progress then done.
    for (let t = Date.parse("2025-03-29T22:00:00Z"); t <= Date.parse("2025-03-31T02:00:00Z"); t += 10 * 60_000) {
      const r = w.tick(new Date(t).toISOString());
      requested.push(...w.requested(r).map((x) => `${x} at ${new Date(t).toISOString().slice(11, 16)}`));
    }
    // First evaluation (23:00 local on the 29th): the tick of that morning, due partition the 28th;
    // then the 30th's 02:30, which does not exist: once, at the first instant after the gap, 03:00 CEST (01:00Z);
    // and the 31st's at 02:30 CEST (00:30Z).
    expect(requested).toEqual(["s/berlin@2025-03-28 at 22:00", "s/berlin@2025-03-29 at 01:00", "s/berlin@2025-03-30 at 00:30"]);
    const fall = new AutomationWorld(graphOf(a));
    const fallRequested: string[] = [];
    for (let t = Date.parse("2025-10-25T22:00:00Z"); t <= Date.parse("2025-10-27T03:00:00Z"); t += 10 * 60_000) {
      fallRequested.push(...fall.requested(fall.tick(new Date(t).toISOString())));
    }
    // The first evaluation takes the latest tick (2025-10-25 02:30), then the tick of the 26th (whose 02:30 happens twice) once.
    expect(fallRequested).toEqual(["s/berlin@2025-10-24", "s/berlin@2025-10-25", "s/berlin@2025-10-26"]);
  });

  it("after the clock jumps a day: only the latest tick without catchup, every missed one with catchup", () => {
    const hours = hourly({ start: "2025-03-01T00:00" });
    const plain = asset({ key: "s/plain", partitions: hours, automation: onCron("0 * * * *") }, noop);
    const caught = asset({ key: "s/caught", partitions: hours, automation: onCron("0 * * * *"), catchup: true }, noop);
    const w = new AutomationWorld(graphOf(plain, caught));
    w.tick("2025-03-10T00:00:30Z");
    w.set("s/plain", { materialized: ["2025-03-09-23:00"] });
    w.tick("2025-03-10T01:00:30Z");
    const before = new Set(w.requested());
    expect(before.has("s/plain@2025-03-10-00:00")).toBe(true);
    w.tick("2025-03-11T01:00:30Z"); // the reconciler was away for a day
    const plainReq = w.requested().filter((x) => x.startsWith("s/plain@"));
    const caughtReq = w.requested().filter((x) => x.startsWith("s/caught@"));
    expect(plainReq).toEqual(["s/plain@2025-03-11-00:00"]);
    expect(caughtReq).toHaveLength(24);
    expect(caughtReq[0]).toBe("s/caught@2025-03-10-01:00");
    expect(caughtReq.at(-1)).toBe("s/caught@2025-03-11-00:00");
  });
});

describe("eager", () => {
  const a = asset({ key: "e/a", partitions: days }, noop);
  const b = asset({ key: "e/b", partitions: days, automation: eager(), deps: { a: dep(a) } }, noop);
  const c = asset({ key: "e/c", partitions: days, automation: eager(), deps: { b: dep(b) } }, noop);

  it("requests partitions whose upstream was updated, not while in progress, and again when the run ends", () => {
    const w = new AutomationWorld(graphOf(a, b, c))
      .set("e/a", { materialized: ["2025-03-01", "2025-03-02"] })
      .set("e/b", { materialized: ["2025-03-01", "2025-03-02"], upstreamUpdated: ["2025-03-01"], inProgress: ["2025-03-01"] })
      .set("e/c", { materialized: ["2025-03-01", "2025-03-02"] });
    w.tick("2025-03-03T00:10:00Z");
    expect(w.requested()).toEqual([]);
    expect(w.last!.records.find((r) => r.assetKey === "e/b" && r.decision === "declined")!.reasons.map((r) => r.operand)).toEqual([
      "upstream_updated",
      "in_progress",
    ]);
    // The run ended having read the old version: still updated, now requested (the event was not dropped).
    w.set("e/b", { inProgress: [] });
    w.tick("2025-03-03T00:11:00Z");
    expect(w.requested()).toEqual(["e/b@2025-03-01"]);
  });

  it("requests a missing root and its eager downstream together, in one run, upstream first", () => {
    const root = asset({ key: "e/root", partitions: days, automation: eager() }, noop);
    const down = asset({ key: "e/down", partitions: days, automation: eager(), deps: { root: dep(root) } }, noop);
    const w = new AutomationWorld(graphOf(root, down))
      .set("e/root", { materialized: ["2025-03-01"] })
      .set("e/down", { materialized: ["2025-03-01"] });
    w.tick("2025-03-02T00:00:01Z");
    w.tick("2025-03-03T00:00:01Z");
    expect(w.last!.runs).toEqual([{ assetKeys: ["e/root", "e/down"], partitionKey: "2025-03-02" }]);
  });

  it("requests the first days of a 7-day window, which read the days there are", () => {
    const up = asset({ key: "w/up", partitions: days }, noop);
    const week = asset(
      { key: "w/week", partitions: days, automation: eager(), catchup: true, deps: { up: dep(up, timeWindow({ startOffset: -6 })) } },
      noop,
    );
    const w = new AutomationWorld(graphOf(up, week)).set("w/up", { materialized: ["2025-03-01", "2025-03-02", "2025-03-03"] });
    w.tick("2025-03-04T00:00:01Z");
    expect(w.requested()).toEqual(["w/week@2025-03-01", "w/week@2025-03-02", "w/week@2025-03-03"]);
    expect(w.last!.records.filter((r) => r.decision === "declined")).toEqual([]);
  });

  it("never requests partitions whose whole window is not defined upstream (allowPartial: false), and says so", () => {
    const up = asset({ key: "w/up", partitions: days }, noop);
    const mapping = timeWindow({ startOffset: -6, allowPartial: false });
    const week = asset({ key: "w/week", partitions: days, automation: eager(), catchup: true, deps: { up: dep(up, mapping) } }, noop);
    const w = new AutomationWorld(graphOf(up, week)).set("w/up", {
      materialized: ["2025-03-01", "2025-03-02", "2025-03-03", "2025-03-04", "2025-03-05", "2025-03-06", "2025-03-07", "2025-03-08"],
    });
    w.tick("2025-03-09T00:00:01Z");
    expect(w.requested()).toEqual(["w/week@2025-03-07", "w/week@2025-03-08"]);
    const declined = w.last!.records.find((r) => r.decision === "declined")!;
    expect(declined.partitions).toEqual([["2025-03-01", "2025-03-06"]]);
    const detail = declined.reasons.find((r) => r.operand === "upstreams_not_ready")!.detail;
    expect(detail).toContain('upstream "w/up" partitions it reads do not exist');
    expect(detail).toContain('before the first partition "2025-03-01" of daily(start 2025-03-01, UTC) (outside it: they never exist)');
    expect(detail).not.toContain("yet");
  });

  it("does not retry a failed partition by itself, but does after an upstream update", () => {
    const w = new AutomationWorld(graphOf(a, b)).set("e/a", { materialized: ["2025-03-01"] }).set("e/b", { failed: ["2025-03-01"] });
    w.tick("2025-03-02T00:00:01Z");
    expect(w.requested()).toEqual([]);
    w.set("e/b", { upstreamUpdated: ["2025-03-01"] });
    w.tick("2025-03-02T00:00:02Z");
    expect(w.requested()).toEqual(["e/b@2025-03-01"]);
  });
});

describe("onMissing and catchup", () => {
  it("without catchup requests only the latest partition at the first evaluation, then each new one", () => {
    const m = asset({ key: "m/a", partitions: days, automation: onMissing() }, noop);
    const w = new AutomationWorld(graphOf(m));
    w.tick("2025-03-10T00:00:01Z");
    expect(w.requested()).toEqual(["m/a@2025-03-09"]);
    w.set("m/a", { inProgress: ["2025-03-09"] });
    w.tick("2025-03-11T00:00:01Z".replace("11T00:00:01", "10T00:05:00"));
    expect(w.requested()).toEqual([]);
    w.set("m/a", { inProgress: [], materialized: ["2025-03-09"] });
    w.tick("2025-03-11T00:00:01Z".replace("11T00:00:01", "10T00:09:00"));
    w.tick("2025-03-11T00:00:01Z".replace("11T00:00:01", "10T23:59:59"));
    // Daily ticks every few minutes would be the usual; one late evaluation inside the gap still counts as continuous.
    expect(w.requested()).toEqual([]);
  });

  it("with catchup requests every missing partition, paced by the per-tick limit", () => {
    const m = asset({ key: "m/c", partitions: days, automation: onMissing(), catchup: true }, noop);
    const w = new AutomationWorld(graphOf(m));
    w.tick("2025-03-10T00:00:01Z", { maxRequestedPerAsset: 5 });
    expect(w.requested()).toEqual(["2025-03-01", "2025-03-02", "2025-03-03", "2025-03-04", "2025-03-05"].map((k) => `m/c@${k}`));
    expect(w.last!.records.find((r) => r.decision === "declined")!.reasons.map((r) => r.operand)).toContain("request_limit");
  });
});

describe("composition and records", () => {
  it("builds custom conditions from operands", () => {
    const up = asset({ key: "c/up", partitions: days }, noop);
    const custom = asset(
      {
        key: "c/custom",
        partitions: days,
        codeVersion: "v2",
        automation: allOf(anyOf(codeVersionChanged(), isMissing()), upstreamsReady(), not(hasFailed())),
        deps: { up: dep(up) },
      },
      noop,
    );
    const w = new AutomationWorld(graphOf(up, custom))
      .set("c/up", { materialized: ["2025-03-01", "2025-03-02", "2025-03-03"] })
      .set("c/custom", { materialized: ["2025-03-01", "2025-03-02"], codeVersionChanged: ["2025-03-01"], failed: ["2025-03-02"] });
    w.tick("2025-03-04T00:00:01Z");
    expect(w.requested()).toEqual(["c/custom@2025-03-01", "c/custom@2025-03-03"]);
    expect(w.last!.records[0]!.condition).toBe("allOf(anyOf(codeVersionChanged(), isMissing()), upstreamsReady(), not(hasFailed()))");
  });

  it("cronTickPassed composes with other operands", () => {
    const a = asset({ key: "c/cron", partitions: days, automation: allOf(cronTickPassed("0 6 * * *"), not(hasFailed())) }, noop);
    const w = new AutomationWorld(graphOf(a)).set("c/cron", { failed: ["2025-03-03"] });
    w.tick("2025-03-04T06:00:01Z");
    expect(w.requested()).toEqual([]);
    w.tick("2025-03-05T06:00:01Z");
    expect(w.requested()).toEqual(["c/cron@2025-03-04"]);
  });

  it("stores a decision only when it changes, and a paused asset is skipped; on resume without catchup only the latest counts", () => {
    const m = asset({ key: "p/a", partitions: days, automation: onMissing() }, noop);
    const w = new AutomationWorld(graphOf(m)).set("p/a", { paused: true });
    w.tick("2025-03-05T00:00:01Z");
    expect(w.last!.records.map((r) => [r.decision, r.reasons[0]!.operand])).toEqual([["skipped", "paused"]]);
    w.tick("2025-03-06T00:00:01Z");
    expect(w.last!.records).toEqual([]);
    w.set("p/a", { paused: false });
    w.tick("2025-03-08T00:00:01Z");
    expect(w.requested()).toEqual(["p/a@2025-03-07"]);
  });

  it("an unpartitioned eager asset follows its unpartitioned upstream", () => {
    const up = asset({ key: "u/up" }, noop);
    const down = asset({ key: "u/down", automation: eager(), deps: { up: dep(up) } }, noop);
    const w = new AutomationWorld(graphOf(up, down)).set("u/down", { materialized: [""] });
    w.tick("2025-03-01T00:00:00Z");
    expect(w.requested()).toEqual([]);
    expect(w.last!.records.map((r) => r.decision)).toEqual(["skipped"]);
    w.set("u/up", { materialized: [""] }).set("u/down", { upstreamUpdated: [""] });
    w.tick("2025-03-01T00:00:01Z");
    expect(w.last!.runs).toEqual([{ assetKeys: ["u/down"], partitionKey: null }]);
  });
});

describe("bad conditions", () => {
  it("rejects a cron that never fires, and malformed condition objects, naming the asset and field", () => {
    expect(() => onCron("0 0 30 2 *")).toThrow(/"0 0 30 2 \*" is not a valid cron expression/);
    expect(() => asset({ key: "b/x", automation: { kind: "and", operands: [] } as never }, noop)).toThrow(
      /asset "b\/x".*allOf\(\) needs at least one condition/,
    );
    expect(() => asset({ key: "b/y", automation: { kind: "or", operands: [{ kind: "sometimes" }] } as never }, noop)).toThrow(
      /automation\.operands\[0\]": unknown condition kind "sometimes"/,
    );
    expect(() => asset({ key: "b/z", automation: { kind: "cron", cron: "61 * * * *", timezone: null } as never }, noop)).toThrow(
      /automation\.cron/,
    );
  });
});

describe("upstreams with blocking checks", () => {
  const src = asset({ key: "k/src", partitions: days }, noop);
  const reader = asset({ key: "k/reader", partitions: days, automation: eager(), deps: { src: dep(src) } }, noop);
  const base = graphOf(src, reader);
  const gate = check(src, { name: "gate", blocking: true }, () => ({ passed: true }));

  it("are not ready while their partition is in an active run (being written or checked); without blocking checks they are", () => {
    const withCheck = new AssetGraph(base.assets, [{ ...gate.spec, file: "checks.ts", exportName: "gate" }]);
    const view = { materialized: ["2025-03-01"], inProgress: ["2025-03-01"] };
    const checked = new AutomationWorld(withCheck).set("k/src", view);
    checked.tick("2025-03-02T00:10:00Z");
    expect(checked.requested()).toEqual([]);
    // The run ended (the verdict passed): requested.
    checked.set("k/src", { inProgress: [] });
    checked.tick("2025-03-02T00:11:00Z");
    expect(checked.requested()).toEqual(["k/reader@2025-03-01"]);

    const unchecked = new AutomationWorld(base).set("k/src", view);
    unchecked.tick("2025-03-02T00:10:00Z");
    expect(unchecked.requested()).toEqual(["k/reader@2025-03-01"]);
  });
});
