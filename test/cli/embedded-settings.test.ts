// The embedded database's buffer pool, as the environment gives it.
import { describe, expect, it } from "vitest";
import { embeddedSharedBuffers } from "../../src/cli/runtime.js";
import { resolveSettings } from "../../src/cli/settings.js";

describe("embedded database settings", () => {
  it("give servers 32MB and one-off commands 16MB, unless TRIBUTARY_EMBEDDED_SHARED_BUFFERS says otherwise", () => {
    const defaults = resolveSettings({}, {});
    expect(embeddedSharedBuffers(defaults, "server")).toBe("32MB");
    expect(embeddedSharedBuffers(defaults, "command")).toBe("16MB");
    const set = resolveSettings({}, { TRIBUTARY_EMBEDDED_SHARED_BUFFERS: "256MB" });
    expect(embeddedSharedBuffers(set, "server")).toBe("256MB");
    expect(embeddedSharedBuffers(set, "command")).toBe("256MB");
    // Empty is unset, as for every other variable.
    expect(resolveSettings({}, { TRIBUTARY_EMBEDDED_SHARED_BUFFERS: "" }).embeddedSharedBuffers).toBeUndefined();
  });

  it("refuse a value that is not a size Postgres takes, naming the variable", () => {
    const refused: [string, string][] = [
      ["lots", "must be a size in kB, MB or GB, e.g. 64MB"],
      ["64 MB", "must be a size in kB, MB or GB, e.g. 64MB"],
      ["64mb", "must be a size in kB, MB or GB, e.g. 64MB"],
      ["512kB", "must be between 1MB and 1GB"],
      ["2GB", "must be between 1MB and 1GB"],
    ];
    for (const [value, message] of refused) {
      expect(() => resolveSettings({}, { TRIBUTARY_EMBEDDED_SHARED_BUFFERS: value }), value).toThrow(
        `environment variable TRIBUTARY_EMBEDDED_SHARED_BUFFERS: ${message}`,
      );
    }
    expect(resolveSettings({}, { TRIBUTARY_EMBEDDED_SHARED_BUFFERS: "1GB" }).embeddedSharedBuffers).toBe("1GB");
  });
});
