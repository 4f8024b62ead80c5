import { describe, expect, it } from "vitest";
import { dataVersionOf } from "../../src/executor/data-version.js";

const a = { assetKey: "s/a", partitionKey: "2025-01-01", dataVersion: "va", eventId: 1 };
const b = { assetKey: "s/b", partitionKey: "", dataVersion: null, eventId: 7 };

describe("dataVersionOf", () => {
  it("depends on the code version and the inputs' versions, in a stable order, not on the output", () => {
    const v = dataVersionOf("c1", [a, b], '{"x":1}');
    expect(v).toMatch(/^[0-9a-f]{16}$/);
    expect(dataVersionOf("c1", [b, a], '{"x":2}')).toBe(v);
    expect(dataVersionOf("c2", [a, b], '{"x":1}')).not.toBe(v);
    expect(dataVersionOf("c1", [{ ...a, dataVersion: "va2" }, b], '{"x":1}')).not.toBe(v);
    // An input without a data version counts by the event that was read.
    expect(dataVersionOf("c1", [a, { ...b, eventId: 8 }], '{"x":1}')).not.toBe(v);
    // The event id of an input with a data version does not matter.
    expect(dataVersionOf("c1", [{ ...a, eventId: 99 }, b], '{"x":1}')).toBe(v);
  });

  it("without inputs: the code version and the output", () => {
    const v = dataVersionOf("c1", [], '{"x":1}');
    expect(dataVersionOf("c1", [], '{"x":1}')).toBe(v);
    expect(dataVersionOf("c1", [], '{"x":2}')).not.toBe(v);
    expect(dataVersionOf("c2", [], '{"x":1}')).not.toBe(v);
  });

  it("without a code version the output stands in for it", () => {
    expect(dataVersionOf(null, [a], '{"x":1}')).not.toBe(dataVersionOf(null, [a], '{"x":2}'));
    expect(dataVersionOf(null, [a], '{"x":1}')).toBe(dataVersionOf(null, [a], '{"x":1}'));
  });
});
