import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TriggerKindProcess } from "../../src/triggerer/index.js";
import { checkTrigger, type TriggerRegistry } from "../../src/trigger-checks/index.js";
import { ROOT } from "../cli/run-cli.js";

// A custom trigger kind exported by a definitions module, next to an asset;
// the file imports zod, so it lives inside the checkout (tmp/ is ignored).
const PARTNER = `
import { asset, triggerKind } from "tributary";
import { z } from "zod";

export const partnerReady = triggerKind({
  kind: "partnerReady",
  args: z.object({ name: z.string(), mode: z.enum(["fire", "wait", "throw", "hang", "exit"]).default("fire") }),
  templateArgs: ["name"],
  async check(args, { partition }) {
    if (args.mode === "throw") throw new Error("partner says no");
    if (args.mode === "hang") return new Promise(() => undefined);
    if (args.mode === "exit") process.exit(3);
    if (args.mode === "wait") return { fired: false, detail: "not yet" };
    return { fired: true, payload: { name: args.name, pid: process.pid, key: partition?.key ?? null } };
  },
});

export const orders = asset({ key: "orders" }, async () => 1);
`;

const now = new Date("2025-03-15T12:00:00Z");

describe("TriggerKindProcess", () => {
  let dir: string;
  let kinds: TriggerKindProcess;
  let registry: TriggerRegistry;

  beforeAll(async () => {
    await mkdir(path.join(ROOT, "tmp"), { recursive: true });
    dir = await mkdtemp(path.join(ROOT, "tmp", "trigger-kinds-"));
    await writeFile(path.join(dir, "partner.ts"), PARTNER);
    await writeFile(path.join(dir, "broken.ts"), `throw new Error("broken at import");\n`);
    kinds = await TriggerKindProcess.start({ definitionsDir: dir, files: ["broken.ts", "partner.ts"], restartDelayMs: 0 });
    registry = kinds.registry;
  }, 60_000);

  afterAll(async () => {
    await kinds?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const check = (args: Record<string, unknown>, options: { timeoutMs?: number; key?: string } = {}) =>
    checkTrigger(
      { kind: "partnerReady", args },
      { partition: { key: options.key ?? "2025-03-15" }, now, assetKey: "partner/feed" },
      { timeoutMs: options.timeoutMs ?? 10_000, registry },
    );

  /** A TriggerError with this code whose message contains `text`. */
  const triggerError = (code: string, text: string, fields: Record<string, unknown> = {}) =>
    expect.objectContaining({ name: "TriggerError", code, message: expect.stringContaining(text), ...fields });

  it("finds the kinds the definitions export and reports the files that failed to import", () => {
    expect(kinds.kinds).toEqual(["partnerReady"]);
    expect(kinds.loadErrors).toHaveLength(1);
    expect(kinds.loadErrors[0]).toMatchObject({ location: { file: "broken.ts" } });
    expect(kinds.loadErrors[0]!.message).toMatch(/^broken\.ts: .*broken at import/);
  });

  it("runs the check in the child, with its templates rendered for the partition", async () => {
    const result = await check({ name: "feed-{partition}" });
    expect(result).toEqual({ fired: true, payload: { name: "feed-2025-03-15", pid: kinds.pid, key: "2025-03-15" } });
    expect(kinds.pid).not.toBe(process.pid);
    expect(await check({ name: "x", mode: "wait" })).toEqual({ fired: false, detail: "not yet" });
  });

  it("validates args with the kind's own schema and names the field", async () => {
    await expect(check({ name: 42 })).rejects.toEqual(
      triggerError("TRIGGER_ARGS_INVALID", "trigger partnerReady has invalid arguments: args.name", {
        location: { field: "args.name", partitionKey: "2025-03-15" },
      }),
    );
  });

  it("reports a template field the partition lacks", async () => {
    await expect(check({ name: "feed-{start}" })).rejects.toEqual(
      triggerError("TRIGGER_TEMPLATE_FIELD_MISSING", 'args.name "feed-{start}" uses {start}'),
    );
  });

  it("turns a throwing check into TRIGGER_CHECK_FAILED with its message", async () => {
    await expect(check({ name: "x", mode: "throw" })).rejects.toEqual(triggerError("TRIGGER_CHECK_FAILED", "partner says no"));
  });

  it("gives a hanging check the triggerer's timeout and keeps serving others", async () => {
    await expect(check({ name: "x", mode: "hang" }, { timeoutMs: 200 })).rejects.toEqual(
      triggerError("TRIGGER_CHECK_TIMEOUT", "trigger partnerReady did not answer within 200 ms"),
    );
    expect((await check({ name: "y" })).fired).toBe(true);
  });

  it("a dying child fails the checks it was running, and the next check gets a new child", async () => {
    const before = kinds.pid;
    const hanging = check({ name: "x", mode: "hang" }, { timeoutMs: 30_000 });
    const exiting = check({ name: "x", mode: "exit" }, { timeoutMs: 30_000 });
    const died = triggerError("TRIGGER_CHECK_FAILED", "the process running custom trigger kinds exited with code 3 during the check");
    await expect(hanging).rejects.toEqual(died);
    await expect(exiting).rejects.toEqual(died);
    const after = await check({ name: "z" });
    expect(after).toMatchObject({ fired: true, payload: { name: "z" } });
    expect(kinds.pid).not.toBe(before);
  });

  it("reload() imports the changed definitions in a new child: a kind defined in a helper module counts too", async () => {
    await mkdir(path.join(dir, "_lib"), { recursive: true });
    await writeFile(
      path.join(dir, "_lib", "kinds.ts"),
      `import { triggerKind } from "tributary";\nexport const helperKind = triggerKind({ kind: "helperKind", check: async () => ({ fired: true, payload: "from helper" }) });\n`,
    );
    // Imports the helper without exporting its kind.
    await writeFile(path.join(dir, "uses-helper.ts"), `import { helperKind } from "./_lib/kinds.ts";\nvoid helperKind;\nexport {};\n`);
    // Re-exports the helper's kind (fine) and makes partnerReady a second time (an error; the first one stays).
    await writeFile(
      path.join(dir, "dup.ts"),
      `import { triggerKind } from "tributary";\nexport { helperKind } from "./_lib/kinds.ts";\n` +
        `export const again = triggerKind({ kind: "partnerReady", check: async () => ({ fired: true, payload: "dup" }) });\n`,
    );
    const before = kinds.pid;
    await kinds.reload(["partner.ts", "uses-helper.ts", "dup.ts"]);
    expect(kinds.kinds).toEqual(["helperKind", "partnerReady"]);
    expect(kinds.loadErrors).toEqual([
      expect.objectContaining({
        code: "TRIGGER_KIND_DUPLICATE",
        location: { file: "dup.ts" },
        message: expect.stringContaining(
          'dup.ts: trigger kind "partnerReady" is also defined in partner.ts; the one in partner.ts is used',
        ),
      }),
    ]);
    expect(kinds.pid).not.toBe(before);
    const result = await checkTrigger({ kind: "helperKind", args: {} }, { now }, { timeoutMs: 10_000, registry: kinds.registry });
    expect(result).toEqual({ fired: true, payload: "from helper" });
    expect(await check({ name: "still" })).toMatchObject({ fired: true, payload: { name: "still" } });
  });
});
