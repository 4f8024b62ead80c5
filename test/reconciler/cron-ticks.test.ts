import { describe, expect, it } from "vitest";
import { cronTicks, latestTick } from "../../src/reconciler/index.js";
import { asset, onCron, timeWindows } from "../../src/index.js";
import { graphOf, noop } from "../planner/helpers.js";
import { AutomationWorld } from "./automation-helpers.js";

const iso = (ticks: readonly Date[]) => ticks.map((t) => t.toISOString());
const NY = "America/New_York";

describe("cron ticks across DST changes (the rules of cron partitions)", () => {
  it("a daily time the clock shows twice ticks at its second occurrence", () => {
    const ticks = cronTicks("30 1 * * *", NY, new Date("2024-11-01T12:00:00Z"), new Date("2024-11-04T12:00:00Z")).ticks;
    expect(iso(ticks)).toEqual(["2024-11-02T05:30:00.000Z", "2024-11-03T06:30:00.000Z", "2024-11-04T06:30:00.000Z"]);
    // At 05:45Z, between the two 01:30s, the latest tick is still the day before's.
    expect(latestTick("30 1 * * *", NY, new Date("2024-11-03T05:45:00Z")).latest?.toISOString()).toBe("2024-11-02T05:30:00.000Z");
  });

  it("an hourly cron ticks in both occurrences of the repeated hour, and skips a skipped hour", () => {
    const fall = cronTicks("30 * * * *", NY, new Date("2024-11-03T04:00:00Z"), new Date("2024-11-03T08:00:00Z")).ticks;
    expect(iso(fall)).toEqual([
      "2024-11-03T04:30:00.000Z",
      "2024-11-03T05:30:00.000Z",
      "2024-11-03T06:30:00.000Z",
      "2024-11-03T07:30:00.000Z",
    ]);
    const spring = cronTicks("30 * * * *", NY, new Date("2025-03-09T05:00:00Z"), new Date("2025-03-09T08:00:00Z")).ticks;
    expect(iso(spring)).toEqual(["2025-03-09T05:30:00.000Z", "2025-03-09T06:30:00.000Z", "2025-03-09T07:30:00.000Z"]);
  });

  it("a daily time the clock skips ticks at the first instant after the gap", () => {
    const ticks = cronTicks("30 2 * * *", "Europe/Berlin", new Date("2025-03-29T00:00:00Z"), new Date("2025-03-31T12:00:00Z")).ticks;
    expect(iso(ticks)).toEqual(["2025-03-29T01:30:00.000Z", "2025-03-30T01:00:00.000Z", "2025-03-31T00:30:00.000Z"]);
  });

  it("onCron requests a cron partition at the second 01:30 of a fall-back night, not the first", () => {
    const windows = timeWindows({ cron: "30 1 * * *", start: "2024-11-01", timezone: NY });
    const nightly = asset({ key: "n/nightly", partitions: windows, automation: onCron("30 1 * * *", { timezone: NY }) }, noop);
    const w = new AutomationWorld(graphOf(nightly));
    w.tick("2024-11-02T06:00:00Z");
    expect(w.requested()).toEqual(["n/nightly@2024-11-01-01:30"]);
    w.tick("2024-11-03T05:45:00Z"); // after the first 01:30: no tick, and the window of 2024-11-02 is still open
    expect(w.requested()).toEqual([]);
    w.tick("2024-11-03T06:31:00Z");
    expect(w.requested()).toEqual(["n/nightly@2024-11-02-01:30"]);
  });
});
