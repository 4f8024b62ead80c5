import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { resolveSettings } from "../../src/cli/settings.js";
import { DEFAULT_ALERTS_CONFIG, parseAlertsConfig } from "../../src/reconciler/index.js";
import { runCli } from "./run-cli.js";

const dir = mkdtempSync(path.join(tmpdir(), "tributary-alerts-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function configFile(name: string, content: unknown): string {
  const file = path.join(dir, name);
  writeFileSync(file, typeof content === "string" ? content : JSON.stringify(content));
  return file;
}

const parse = (config: unknown) => () =>
  parseAlertsConfig(typeof config === "string" ? config : JSON.stringify(config), "/etc/alerts.json");

describe("alerts config (TRIBUTARY_ALERTS)", () => {
  it("without TRIBUTARY_ALERTS every alert goes to the log", () => {
    const settings = resolveSettings({}, {});
    expect(settings.alerts).toBe(DEFAULT_ALERTS_CONFIG);
    expect(settings.alerts.default).toEqual(["log"]);
  });

  it("reads sinks, routes, the default and the delivery policy", () => {
    const file = configFile("good.json", {
      sinks: {
        "slack-sales": { type: "webhook", url: "https://hooks.example.com/T/B/x", timeout: "5s", headers: { authorization: "Bearer t" } },
      },
      routes: [{ owner: "team:sales", sinks: ["slack-sales", "log"] }],
      default: ["log"],
      delivery: { maxAttempts: 4, retryDelay: "30s", maxRetryDelay: "10m" },
    });
    const { alerts } = resolveSettings({}, { TRIBUTARY_ALERTS: file });
    expect(alerts).toEqual({
      sinks: {
        log: { type: "log" },
        "slack-sales": {
          type: "webhook",
          url: "https://hooks.example.com/T/B/x",
          timeoutMs: 5_000,
          headers: { authorization: "Bearer t" },
        },
      },
      routes: [{ owner: "team:sales", sinks: ["slack-sales", "log"] }],
      default: ["log"],
      delivery: { maxAttempts: 4, retryDelayMs: 30_000, maxRetryDelayMs: 600_000 },
      source: file,
    });
  });

  it("a bad config is an error naming the file and the field", () => {
    const cases: [unknown, RegExp][] = [
      ["{ not json", /alerts config \/etc\/alerts\.json \(TRIBUTARY_ALERTS\): not valid JSON/],
      [[], /the config must be a JSON object/],
      [{ sinks: { s: { type: "email", to: "x@y" } } }, /field "sinks\.s\.type": a sink needs "type": "webhook" or "log"/],
      [{ sinks: { s: { type: "webhook", url: "ftp://x" } } }, /field "sinks\.s\.url": must be an http:\/\/ or https:\/\/ URL/],
      [{ sinks: { s: { type: "webhook" } } }, /field "sinks\.s\.url": the webhook URL is required/],
      [{ sinks: { s: { type: "webhook", url: "http://x", timeout: "soon" } } }, /field "sinks\.s\.timeout": "soon" is not a duration/],
      [
        { routes: [{ owner: "team:sales", sinks: ["slack"] }] },
        /field "routes\[0\]\.sinks\[0\]": unknown sink "slack"; the sinks are "log"/,
      ],
      [{ routes: [{ sinks: ["log"] }] }, /field "routes\[0\]\.owner": the owner the route matches is required/],
      [{ routes: [{ owner: "a", sinks: [] }] }, /field "routes\[0\]\.sinks": name at least one sink/],
      [{ default: ["nowhere"] }, /field "default\[0\]": unknown sink "nowhere"/],
      [{ delivery: { maxAttempts: 0 } }, /field "delivery\.maxAttempts"/],
      [{ sink: {} }, /field "sink": unknown field/],
      [{ sinks: { "bad name!": { type: "log" } } }, /field "sinks\.bad name!": sink names are letters/],
      [{ routes: "x" }, /field "routes": a list of \{ owner, sinks \} routes/],
    ];
    for (const [config, message] of cases) {
      expect(parse(config), JSON.stringify(config)).toThrow(message);
      expect(parse(config)).toThrow(expect.objectContaining({ code: "ALERTS_CONFIG_INVALID" }));
    }
  });

  it("a missing file is a clear error", () => {
    const missing = path.join(dir, "nope.json");
    expect(() => resolveSettings({}, { TRIBUTARY_ALERTS: missing })).toThrow(
      new RegExp(`alerts config ${missing.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} \\(TRIBUTARY_ALERTS\\): cannot be read`),
    );
  });

  it("`tributary reconciler` with a bad config stops at startup, naming the file and the field", async () => {
    const file = configFile("bad.json", { sinks: { hook: { type: "webhook", url: "not a url" } }, default: ["hook"] });
    const result = await runCli(["reconciler", "--data-dir", path.join(dir, "data")], { env: { TRIBUTARY_ALERTS: file } });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("[ALERTS_CONFIG_INVALID]");
    expect(result.stderr).toContain(file);
    expect(result.stderr).toContain('field "sinks.hook.url"');
  });
});
