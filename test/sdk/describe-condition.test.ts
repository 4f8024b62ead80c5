import { describe, expect, it } from "vitest";
import {
  allOf,
  anyOf,
  codeVersionChanged,
  conditionInWords,
  cronTickPassed,
  daily,
  describeCondition,
  eager,
  hasFailed,
  hourly,
  inLatestWindow,
  isInProgress,
  isMissing,
  multiPartitions,
  not,
  onCron,
  onMissing,
  staticPartitions,
  upstreamsReady,
  upstreamUpdated,
} from "../../src/index.js";
import { cronInWords } from "../../src/partitions/index.js";

const days = daily({ start: "2025-01-01" });
const orders = { partitions: days, upstreams: ["shop/raw_orders"] };

describe("describeCondition", () => {
  it("reads as the SDK calls that build the condition", () => {
    expect(describeCondition(anyOf(onCron("0 1 * * *", { timezone: "UTC" }), allOf(isMissing(), inLatestWindow(14))))).toBe(
      'anyOf(onCron("0 1 * * *", { timezone: "UTC" }), allOf(isMissing(), inLatestWindow(14)))',
    );
  });
});

describe("conditionInWords", () => {
  it("says when a cron waits for the upstream", () => {
    const sentence = "materialise the latest daily partition every day at 01:00 UTC once `shop/raw_orders` is there";
    expect(conditionInWords(allOf(onCron("0 1 * * *", { timezone: "UTC" }), upstreamsReady()), orders)).toBe(sentence);
    // onCron waits for the upstream by itself.
    expect(conditionInWords(onCron("0 1 * * *", { timezone: "UTC" }), orders)).toBe(sentence);
    expect(conditionInWords(allOf(cronTickPassed("0 1 * * *", { timezone: "UTC" }), upstreamsReady()), orders)).toBe(sentence);
  });

  it("names the zone a cron without one is read in, and drops the partition for an unpartitioned asset", () => {
    expect(conditionInWords(onCron("0 3 * * *"))).toBe("materialise it every day at 03:00 in the reconciler's time zone");
    expect(conditionInWords(cronTickPassed("30 6 * * 1-5", { timezone: "Europe/Berlin" }), { partitions: days })).toBe(
      "materialise the latest daily partition every Monday to Friday at 06:30 Europe/Berlin",
    );
  });

  it("reads a hand-written condition as one sentence: which partitions, when, once what, unless what", () => {
    const condition = allOf(
      anyOf(isMissing(), upstreamUpdated()),
      upstreamsReady(),
      inLatestWindow(3),
      not(isInProgress()),
      not(hasFailed()),
    );
    expect(conditionInWords(condition, orders)).toBe(
      "materialise any of the latest 3 daily partitions when it is missing or `shop/raw_orders` changed since it last read it, " +
        "once `shop/raw_orders` is there, unless it is in progress or its latest try failed",
    );
  });

  it("makes each operand of anyOf a sentence of its own", () => {
    const condition = anyOf(
      onCron("5 * * * *", { timezone: "Europe/Berlin" }),
      allOf(isMissing(), inLatestWindow(48), not(isInProgress()), not(hasFailed())),
    );
    expect(conditionInWords(condition, { partitions: hourly({ start: "2025-01-01" }) })).toBe(
      "materialise the latest hourly partition every hour at minute 5; " +
        "also materialise any of the latest 48 hourly partitions when it is missing, unless it is in progress or its latest try failed",
    );
  });

  it("says what eager() and onMissing() do, naming the upstream assets", () => {
    const two = { partitions: days, upstreams: ["shop/raw_orders", "shop/customers"] };
    expect(conditionInWords(eager(), two)).toBe(
      "materialise a partition when `shop/raw_orders` or `shop/customers` changed since it last read them, " +
        "or when it is missing and `shop/raw_orders` and `shop/customers` are there; not while it is in progress",
    );
    expect(conditionInWords(eager(), { partitions: days })).toBe("materialise a partition when it is missing; not while it is in progress");
    expect(conditionInWords(onMissing(), orders)).toBe(
      "materialise a partition when it is missing, once `shop/raw_orders` is there, unless it is in progress or its latest try failed",
    );
  });

  it("puts nested groups in parentheses and reads negations of any operand", () => {
    const condition = allOf(anyOf(codeVersionChanged(), allOf(isMissing(), inLatestWindow())), not(upstreamUpdated()), not(isMissing()));
    expect(conditionInWords(condition, orders)).toBe(
      "materialise a partition when it was materialised with another code version or (it is missing and it is the latest partition), " +
        "unless `shop/raw_orders` changed since it last read it or it is missing",
    );
  });

  it("names the cadence of the time dimension of a multi-partitioned asset", () => {
    const partitions = multiPartitions({ date: days, region: staticPartitions(["eu", "us"]) });
    expect(conditionInWords(allOf(isMissing(), inLatestWindow(2)), { partitions })).toBe(
      "materialise any of the latest 2 daily partitions when it is missing",
    );
  });
});

describe("cronInWords", () => {
  it("reads the common shapes and quotes the rest", () => {
    expect(cronInWords("0 1 * * *", "UTC")).toBe("every day at 01:00 UTC");
    expect(cronInWords("*/15 * * * *", null)).toBe("every 15 minutes");
    expect(cronInWords("* * * * *", null)).toBe("every minute");
    expect(cronInWords("0 */6 * * *", null)).toBe("every 6 hours at minute 0");
    expect(cronInWords("0 6 * * 1,3,5", "UTC")).toBe("every Monday, Wednesday and Friday at 06:00 UTC");
    expect(cronInWords("0 0 * * 0", "UTC")).toBe("every Sunday at 00:00 UTC");
    expect(cronInWords("0 0 1 * *", "UTC")).toBe("on the 1st of every month at 00:00 UTC");
    expect(cronInWords("0 0 22 * *", "UTC")).toBe("on the 22nd of every month at 00:00 UTC");
    expect(cronInWords("0 9-17/2 * * 1-5", "UTC")).toBe('on the cron schedule "0 9-17/2 * * 1-5" (UTC)');
  });
});
