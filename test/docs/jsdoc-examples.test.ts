import { describe, expect, it } from "vitest";
import { checkExamples, extractExamples } from "./jsdoc-examples.js";

describe("the @example blocks of the code's JSDoc", () => {
  it("finds them", () => {
    const examples = extractExamples();
    expect(examples.length).toBeGreaterThan(80);
    // A tag with its code on the same line, and one with its code on the lines below, are both read.
    expect(examples.find((e) => e.file === "src/partitions/time-partitions.ts")?.code).toBe(
      'hourly({ start: "2025-01-01", timezone: "America/New_York" })',
    );
    expect(examples.find((e) => e.file === "src/partitions/partition-space.ts")?.code.split("\n")).toHaveLength(3);
  });

  it("type-check against the code they document", () => {
    const problems = checkExamples(extractExamples());
    expect(problems.map((p) => `${p.where}: ${p.message}`)).toEqual([]);
  }, 120_000);

  it("reports an example that does not compile, naming its file and line", () => {
    const problems = checkExamples([{ file: "src/partitions/time-partitions.ts", line: 7, code: 'daily({ begin: "2025-01-01" })' }]);
    expect(problems).toHaveLength(1);
    expect(problems[0]!.where).toBe("src/partitions/time-partitions.ts:7");
    expect(problems[0]!.message).toMatch(/begin/);
  }, 120_000);
});
