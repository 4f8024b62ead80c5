import { describe, expect, it } from "vitest";
import { PartitionError } from "../../src/errors/index.js";
import {
  daily,
  dynamicPartitions,
  hourly,
  loadPartitionSpace,
  multiPartitionKey,
  multiPartitions,
  partitionSpace,
  staticPartitions,
} from "../../src/partitions/index.js";

const now = new Date("2025-01-04T00:00:00Z");

describe("static and dynamic partitions", () => {
  it("index keys in list order and always exist", () => {
    const regions = partitionSpace(staticPartitions(["eu", "us", "apac"]));
    expect(regions.size).toBe(3);
    expect(regions.count(now)).toBe(3);
    expect(regions.indexOf("apac")).toBe(2);
    expect(regions.keyAt(1)).toBe("us");
    expect(regions.window("eu")).toBeUndefined();
    expect(regions.range("eu", "us").serialize()).toBe("0-2");
    expect(() => regions.range("apac", "eu")).toThrow(/"apac" comes after "eu"/);
    expect(regions.has("EU")).toBe(false);
  });

  it("suggest the closest key", () => {
    const regions = partitionSpace(staticPartitions(["eu-west", "us-east", "apac"]));
    expect(() => regions.indexOf("eu-wset")).toThrow(
      '"eu-wset" is not a partition of static(eu-west, us-east, apac): did you mean "eu-west"? valid keys: "eu-west", "us-east", "apac"',
    );
  });

  it("take dynamic keys from the context, in insertion order", async () => {
    const spec = dynamicPartitions("customers");
    const space = partitionSpace(spec, { dynamicKeys: (name) => (name === "customers" ? ["c-3", "c-1", "c-2"] : []) });
    expect(space.indexOf("c-1")).toBe(1);
    expect([...space.keys(space.all(now))]).toEqual(["c-3", "c-1", "c-2"]);
    expect(() => partitionSpace(spec)).toThrow(expect.objectContaining({ code: "PARTITION_CONTEXT_MISSING" }));
    const empty = partitionSpace(spec, { dynamicKeys: () => [] });
    expect(empty.count(now)).toBe(0);
    expect(() => empty.indexOf("c-1")).toThrow(/has no keys yet/);
    const loaded = await loadPartitionSpace(spec, async () => ["a", "b"]);
    expect(loaded.keyAt(1)).toBe("b");
  });
});

describe("multi partitions", () => {
  const spec = multiPartitions({
    region: staticPartitions(["eu", "us"]),
    date: daily({ start: "2025-01-01" }),
    channel: staticPartitions(["web", "app", "store"]),
  });
  const space = partitionSpace(spec);

  it("key dimensions in declaration order, index with the time dimension most significant", () => {
    expect(space.keyAt(0)).toBe("eu|2025-01-01|web");
    expect(space.keyAt(1)).toBe("eu|2025-01-01|app");
    expect(space.keyAt(3)).toBe("us|2025-01-01|web");
    expect(space.keyAt(6)).toBe("eu|2025-01-02|web");
    expect(space.indexOf("us|2025-01-02|store")).toBe(11);
    for (let i = 0; i < 200; i += 7) expect(space.indexOf(space.keyAt(i))).toBe(i);
    expect(space.dimensions("us|2025-01-02|store")).toEqual({ region: "us", date: "2025-01-02", channel: "store" });
    expect(multiPartitionKey(spec, { date: "2025-01-02", channel: "store", region: "us" })).toBe("us|2025-01-02|store");
  });

  it("exist per closed day, all regions and channels at once: one range", () => {
    expect(space.size).toBe(Infinity);
    expect(space.count(now)).toBe(3 * 6);
    expect(space.all(now).serialize()).toBe("0-18");
    expect(space.window("us|2025-01-02|store")).toEqual({
      start: new Date("2025-01-02T00:00:00Z"),
      end: new Date("2025-01-03T00:00:00Z"),
    });
  });

  it("take a date range across the other dimensions, or a range of full keys", () => {
    const days = space.range("2025-01-02", "2025-01-03");
    expect(days.serialize()).toBe("6-18");
    expect(days.count()).toBe(12);
    expect(space.range("eu|2025-01-01|store", "eu|2025-01-02|web").serialize()).toBe("2-7");
  });

  it("explain bad keys by dimension", () => {
    expect(() => space.indexOf("eu|2025-01-01")).toThrow(/expected 3 keys separated by "\|" \(region\|date\|channel\)/);
    const err = (() => {
      try {
        space.indexOf("eu|2025-13-01|web");
      } catch (e) {
        return e as PartitionError;
      }
      throw new Error("no error");
    })();
    expect(err.code).toBe("PARTITION_KEY_INVALID");
    expect(err.message).toMatch(
      /dimension "date": "2025-13-01" is not a partition of daily\(start 2025-01-01, UTC\): 2025-13-01 is not a day: there is no month 13/,
    );
  });

  it("works without a time dimension (first dimension most significant) and with dynamic ones", () => {
    const s = partitionSpace(multiPartitions({ a: staticPartitions(["x", "y"]), b: dynamicPartitions("ids") }), {
      dynamicKeys: () => ["1", "2", "3"],
    });
    expect(s.size).toBe(6);
    expect(s.keyAt(4)).toBe("y|2");
    expect(s.window("y|2")).toBeUndefined();
    const empty = partitionSpace(multiPartitions({ a: hourly({ start: "2025-01-01" }), b: dynamicPartitions("ids") }), {
      dynamicKeys: () => [],
    });
    expect(empty.size).toBe(0);
    expect(empty.count(now)).toBe(0);
  });
});
