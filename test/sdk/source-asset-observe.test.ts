import { afterAll, describe, expect, it } from "vitest";
import { DefinitionError } from "../../src/errors/index.js";
import {
  daily,
  dynamicPartitions,
  fileExists,
  httpOk,
  multiPartitions,
  s3ObjectExists,
  sourceAsset,
  staticPartitions,
} from "../../src/index.js";
import { loadDefinitions } from "../../src/loader/index.js";
import { definitionsDir, fileResult, removeDefinitionsDirs } from "../loader/helpers.js";

afterAll(removeDefinitionsDirs);

/** The DefinitionError that `fn` throws. */
function definitionErrorOf(fn: () => unknown): DefinitionError {
  try {
    fn();
  } catch (err) {
    if (err instanceof DefinitionError) return err;
    throw err;
  }
  throw new Error("expected a DefinitionError");
}

describe("sourceAsset observe templates", () => {
  it("accepts the fields the partitions can fill", () => {
    expect(() =>
      sourceAsset({
        key: "ok/daily",
        partitions: daily({ start: "2025-01-01" }),
        observe: fileExists("/in/{partition}/{start}-{end}.csv"),
      }),
    ).not.toThrow();
    expect(() =>
      sourceAsset({
        key: "ok/multi",
        partitions: multiPartitions({ date: daily({ start: "2025-01-01" }), region: staticPartitions(["eu"]) }),
        observe: s3ObjectExists("bucket", "{partition}/{start}"),
      }),
    ).not.toThrow();
    expect(() =>
      sourceAsset({ key: "ok/static", partitions: staticPartitions(["eu"]), observe: httpOk("https://x/{partition}?q={{start}}") }),
    ).not.toThrow();
    expect(() => sourceAsset({ key: "ok/plain", observe: fileExists("/in/rates.csv") })).not.toThrow();
  });

  it.each([
    ["static partitions", { partitions: staticPartitions(["eu", "us"]) }, fileExists("/in/{partition}/{start}.csv"), "start", "path"],
    ["dynamic partitions", { partitions: dynamicPartitions("customers") }, fileExists("/in/{ end }.csv"), "end", "path"],
    ["no partitions", {}, httpOk("https://partner/{partition}"), "partition", "url"],
    [
      "a multi-partition without time",
      { partitions: multiPartitions({ a: staticPartitions(["x"]), b: staticPartitions(["y"]) }) },
      s3ObjectExists("b", "{start}"),
      "start",
      "key",
    ],
  ])("rejects a field that %s cannot fill, naming the asset and field", (_what, partitions, observe, field, arg) => {
    const err = definitionErrorOf(() => sourceAsset({ key: "bad/source", ...partitions, observe }));
    expect(err.code).toBe("OBSERVE_TEMPLATE_FIELD_MISSING");
    expect(err.location).toEqual({ assetKey: "bad/source", field: `observe.args.${arg}` });
    expect(err.message).toContain(`asset "bad/source": field "observe.args.${arg}"`);
    expect(err.message).toContain(`{${field}}`);
  });

  it("fails the definitions file at load time", async () => {
    const dir = await definitionsDir({
      "feed.ts": `import { fileExists, sourceAsset, staticPartitions } from "tributary";
export const feed = sourceAsset({ key: "partner/feed", partitions: staticPartitions(["eu"]), observe: fileExists("/in/{start}.csv") });
`,
    });
    const result = await loadDefinitions({ dir });
    const { status, error } = fileResult(result, "feed.ts");
    expect(status).toBe("error");
    expect(error?.code).toBe("OBSERVE_TEMPLATE_FIELD_MISSING");
    expect(error?.message).toContain('asset "partner/feed": field "observe.args.path"');
    expect(error?.location).toMatchObject({ assetKey: "partner/feed", field: "observe.args.path" });
  }, 60_000);
});
