import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as sourceSdk from "../../src/index.js";
import { DefinitionsChild } from "../../src/loader/definitions-child.js";
import { SDK_SOURCE_URL, sdkEntryUrl } from "../../src/loader/sdk-bundle.js";

const BASIC = fileURLToPath(new URL("../fixtures/definitions/basic", import.meta.url));

describe("the SDK children load", () => {
  it("is a cached single-file bundle with the same exports as the sources", async () => {
    const url = await sdkEntryUrl();
    expect(url).toMatch(/\/node_modules\/\.cache\/tributary\/sdk-[0-9a-f]{16}\.mjs$/);
    expect(await sdkEntryUrl()).toBe(url);
    const bundled = (await import(url)) as Record<string, unknown>;
    expect(Object.keys(bundled).sort()).toEqual(Object.keys(sourceSdk).sort());
  });

  it("can also be the unbundled sources (the fallback), with the same result", async () => {
    const load = async (sdkUrl: string) => {
      const child = new DefinitionsChild(BASIC, 256, sdkUrl);
      expect(await child.ready).toBe(true);
      const file = path.join(BASIC, "sales", "orders.ts");
      return child.load({ type: "load", file, relFile: "sales/orders.ts" }, 30_000);
    };
    const fromSources = await load(SDK_SOURCE_URL);
    const fromBundle = await load(await sdkEntryUrl());
    expect(fromSources.kind).toBe("reply");
    if (fromSources.kind !== "reply" || fromBundle.kind !== "reply") return;
    expect(fromSources.reply.assets.map((a) => a.exportName)).toEqual(["orders"]);
    expect({ ...fromSources.reply, imports: [] }).toEqual({ ...fromBundle.reply, imports: [] });
  }, 60_000);
});
