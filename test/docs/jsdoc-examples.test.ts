import { describe, expect, it } from "vitest";
import { checkExamples, examplesOfComment, extractExamples } from "./jsdoc-examples.js";

describe("the @example blocks of the code's JSDoc", () => {
  it("finds them", () => {
    const examples = extractExamples();
    expect(examples.length).toBeGreaterThan(80);
    // A tag with its code on the same line, and one with its code on the lines below, are both read.
    expect(examples.filter((e) => e.file === "src/partitions/time-partitions.ts").map((e) => e.code)).toContain(
      'hourly({ start: "2025-01-01", timezone: "America/New_York" })',
    );
    expect(examples.find((e) => e.file === "src/partitions/partition-space.ts")?.code.split("\n")).toHaveLength(3);
  });

  it("reads a tag at the start of a line only", () => {
    const comment = ["/**", " * Daily windows. @example daily({})", " * @example", ' * daily({ start: "2025-01-01" })', " */"].join("\n");
    expect(examplesOfComment(comment)).toEqual([{ line: 2, code: 'daily({ start: "2025-01-01" })' }]);
  });

  it("type-check against the code they document", () => {
    const problems = checkExamples(extractExamples());
    expect(problems.map((p) => `${p.where}: ${p.message}`)).toEqual([]);
  }, 120_000);

  it("lets an example import the names it uses itself", () => {
    const code = [
      'import { asset, daily } from "tributary";',
      'asset({ key: "a/b", partitions: daily({ start: "2025-01-01" }) }, async () => 1);',
    ];
    expect(checkExamples([{ file: "src/sdk/asset.ts", line: 1, code: code.join("\n") }])).toEqual([]);
  }, 120_000);

  it("reports an example that does not compile, naming its file and line", () => {
    const problems = checkExamples([{ file: "src/partitions/time-partitions.ts", line: 7, code: 'daily({ begin: "2025-01-01" })' }]);
    expect(problems).toHaveLength(1);
    expect(problems[0]!.where).toBe("src/partitions/time-partitions.ts:7");
    expect(problems[0]!.message).toMatch(/begin/);
  }, 120_000);
});
