import { describe, expect, it } from "vitest";
import { daily, partitionKeyWindowIso } from "../../src/partitions/index.js";
import { renderTemplate, TriggerError } from "../../src/trigger-checks/index.js";

function thrown(fn: () => unknown): TriggerError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(TriggerError);
    return err as TriggerError;
  }
  throw new Error("expected a TriggerError");
}

describe("renderTemplate", () => {
  const window = partitionKeyWindowIso(daily({ start: "2025-01-01" }), "2025-03-15")!;
  const day = { key: "2025-03-15", window };

  it("fills {partition}, {start} and {end} from a time partition", () => {
    expect(renderTemplate("/in/{partition}.csv", day)).toBe("/in/2025-03-15.csv");
    expect(renderTemplate("from={start}&to={end}", day)).toBe(`from=${window.start}&to=${window.end}`);
    expect(renderTemplate("from={start}", day)).toBe("from=2025-03-15T00:00:00Z");
  });

  it("renders Date windows as ISO instants", () => {
    const p = { key: "x", window: { start: new Date("2025-03-15T00:00:00Z"), end: new Date("2025-03-16T00:00:00Z") } };
    expect(renderTemplate("{start}/{end}", p)).toBe("2025-03-15T00:00:00.000Z/2025-03-16T00:00:00.000Z");
  });

  it("leaves text without fields alone and reads {{ }} as literal braces", () => {
    expect(renderTemplate("/data/fixed.csv", undefined)).toBe("/data/fixed.csv");
    expect(renderTemplate('{{"k": "{partition}"}}', { key: "eu" })).toBe('{"k": "eu"}');
  });

  it("rejects {start} on a static partition, naming the template and field", () => {
    const err = thrown(() => renderTemplate("/in/{start}.csv", { key: "eu" }, "args.path"));
    expect(err.code).toBe("TRIGGER_TEMPLATE_FIELD_MISSING");
    expect(err.message).toContain("/in/{start}.csv");
    expect(err.message).toContain("{start}");
    expect(err.message).toContain('partition "eu" has no time window');
    expect(err.location).toMatchObject({ field: "args.path", partitionKey: "eu" });
  });

  it("rejects {partition} when the asset is not partitioned", () => {
    const err = thrown(() => renderTemplate("/in/{partition}.csv", undefined));
    expect(err.code).toBe("TRIGGER_TEMPLATE_FIELD_MISSING");
    expect(err.message).toContain("not partitioned");
  });

  it("rejects an unknown field and lists the known ones", () => {
    const err = thrown(() => renderTemplate("/in/{foo}.csv", day));
    expect(err.code).toBe("TRIGGER_TEMPLATE_FIELD_UNKNOWN");
    expect(err.message).toContain("{foo}");
    expect(err.message).toContain("{partition}, {start}, {end}");
    // Formats are not part of the SDK's promise: named, not silently ignored.
    expect(thrown(() => renderTemplate("{start:yyyy-MM-dd}", day)).code).toBe("TRIGGER_TEMPLATE_FIELD_UNKNOWN");
  });

  it("rejects unmatched braces", () => {
    expect(thrown(() => renderTemplate("/in/{partition.csv", day)).code).toBe("TRIGGER_TEMPLATE_INVALID");
    expect(thrown(() => renderTemplate("/in/partition}.csv", day)).code).toBe("TRIGGER_TEMPLATE_INVALID");
  });
});
