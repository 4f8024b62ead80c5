import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { loadDefinitions, triggerKindFiles } from "../../src/loader/index.js";
import { definedTriggerKinds, definitionKind, isTriggerKindKnown, triggerKind } from "../../src/sdk/index.js";
import { ROOT } from "../cli/run-cli.js";

const fired = async () => ({ fired: true as const, payload: null });

/** What a DefinitionError thrown by `fn` must look like. */
const definitionError = (fields: Record<string, unknown>) => expect.objectContaining({ name: "DefinitionError", ...fields });

describe("triggerKind()", () => {
  it("makes a factory of validated, frozen trigger specs that the loader recognises as a trigger kind", () => {
    const partnerReady = triggerKind({
      kind: "partnerReadyA",
      args: z.object({ url: z.string(), status: z.number().default(200) }),
      templateArgs: ["url"],
      check: fired,
    });
    const spec = partnerReady({ url: "https://partner/{partition}" });
    expect(spec).toEqual({ kind: "partnerReadyA", args: { url: "https://partner/{partition}", status: 200 } });
    expect(Object.isFrozen(spec.args)).toBe(true);
    expect(definitionKind(partnerReady)).toBe("trigger");
    expect(partnerReady.templateArgs).toEqual(["url"]);
    expect(partnerReady.definedIn).toBe(import.meta.filename);
  });

  it("rejects bad args when the trigger is made, naming the field", () => {
    const kind = triggerKind({ kind: "partnerReadyB", args: z.object({ url: z.string() }), check: fired });
    expect(() => kind({ url: 3 } as never)).toThrow(
      definitionError({ message: expect.stringContaining('trigger partnerReadyB(): field "args.url"'), location: { field: "args.url" } }),
    );
    const anyArgs = triggerKind({ kind: "partnerReadyC", check: fired });
    expect(anyArgs({ n: 1 })).toEqual({ kind: "partnerReadyC", args: { n: 1 } });
    expect(() => anyArgs({ when: new Date() } as never)).toThrow(
      definitionError({ message: expect.stringMatching(/^trigger partnerReadyC\(\): .*when/), location: { field: "args.when" } }),
    );
  });

  it("rejects a kind that is badly named, built in, or has no check", () => {
    const invalid = (field: string, message: string) =>
      definitionError({ code: "TRIGGER_KIND_INVALID", location: { field }, message: expect.stringContaining(message) });
    expect(() => triggerKind({ kind: "has space", check: fired })).toThrow(invalid("kind", 'kind "has space" is not a valid name'));
    expect(() => triggerKind({ kind: "fileExists", check: fired })).toThrow(invalid("kind", '"fileExists" is a built-in trigger kind'));
    expect(() => triggerKind({ kind: "noCheck" } as never)).toThrow(invalid("check", "check must be a function"));
    expect(() => triggerKind({ kind: "badTemplates", templateArgs: "url" as never, check: fired })).toThrow(
      invalid("templateArgs", "templateArgs must be a list of argument names"),
    );
  });

  it("types the check's args as the schema's output and the factory's as its input", () => {
    const typed = triggerKind({
      kind: "typedKind",
      args: z.object({ url: z.string(), status: z.number().default(200) }),
      async check(args) {
        expectTypeOf(args).toEqualTypeOf<{ url: string; status: number }>();
        return { fired: false };
      },
    });
    expectTypeOf(typed).parameter(0).toEqualTypeOf<{ url: string; status?: number | undefined }>();
  });

  it("isTriggerKindKnown: built-ins and kinds defined in this process", () => {
    expect(isTriggerKindKnown("fileExists")).toBe(true);
    expect(isTriggerKindKnown("neverDefined")).toBe(false);
    triggerKind({ kind: "definedHere", check: fired });
    expect(isTriggerKindKnown("definedHere")).toBe(true);
    expect(definedTriggerKinds().map((k) => k.kind)).toContain("definedHere");
  });
});

describe("the definitions loader and trigger kinds", () => {
  let dir: string;
  beforeAll(async () => {
    await mkdir(path.join(ROOT, "tmp"), { recursive: true });
    dir = await mkdtemp(path.join(ROOT, "tmp", "trigger-kind-load-"));
    await writeFile(
      path.join(dir, "kinds.ts"),
      `import { triggerKind } from "tributary";\nexport const ready = triggerKind({ kind: "ready", check: async () => ({ fired: false }) });\n`,
    );
    await writeFile(
      path.join(dir, "assets.ts"),
      `import { asset, triggerKind } from "tributary";\n` +
        `export const partner = triggerKind({ kind: "partner", check: async () => ({ fired: false }) });\n` +
        `export const orders = asset({ key: "orders" }, async () => 1);\n`,
    );
    await writeFile(
      path.join(dir, "plain.ts"),
      `import { asset } from "tributary";\nexport const plain = asset({ key: "plain" }, async () => 1);\n`,
    );
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("loads files exporting trigger kinds without errors or warnings, counts only the assets, and names the files with kinds", async () => {
    const result = await loadDefinitions({ dir });
    const byFile = Object.fromEntries(result.files.map((f) => [f.file, f]));
    expect(byFile["kinds.ts"]).toMatchObject({ status: "ok", assets: [], warnings: [], triggerKinds: 1 });
    expect(byFile["assets.ts"]).toMatchObject({ status: "ok", warnings: [], triggerKinds: 1 });
    expect(byFile["plain.ts"]).toMatchObject({ status: "ok", triggerKinds: 0 });
    expect(result.snapshot.assets.map((a) => a.key)).toEqual(["orders", "plain"]);
    expect(triggerKindFiles(result.files)).toEqual(["assets.ts", "kinds.ts"]);
  }, 60_000);
});
