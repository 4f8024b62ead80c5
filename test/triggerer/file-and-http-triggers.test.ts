import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { daily, partitionKeyWindowIso } from "../../src/partitions/index.js";
import { fileExists, httpOk } from "../../src/sdk/index.js";
import { builtInTriggers, checkTrigger, TriggerError } from "../../src/trigger-checks/index.js";

const registry = builtInTriggers();
const now = new Date();
const day = { key: "2025-03-15", window: partitionKeyWindowIso(daily({ start: "2025-01-01" }), "2025-03-15")! };

describe("fileExists", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "tributary-trigger-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("waits for the partition's file, then fires with its size and mtime", async () => {
    const spec = fileExists(path.join(dir, "in", "{partition}.csv"));
    expect(await checkTrigger(spec, { partition: day, now }, { timeoutMs: 5000, registry })).toMatchObject({ fired: false });

    await writeFile(path.join(dir, "2025-03-15.csv"), "a,b\n1,2\n");
    const flat = fileExists(path.join(dir, "{partition}.csv"));
    const result = await checkTrigger(flat, { partition: day, now }, { timeoutMs: 5000, registry });
    expect(result).toMatchObject({ fired: true, payload: { path: path.join(dir, "2025-03-15.csv"), size: 8 } });
    if (!result.fired) throw new Error("unreachable");
    expect(Date.parse((result.payload as { mtime: string }).mtime)).toBeGreaterThan(0);
  });

  it("renders {start} and {end} from the window", async () => {
    const name = `${day.window.start}_${day.window.end}`;
    await writeFile(path.join(dir, name), "");
    const result = await checkTrigger(fileExists(path.join(dir, "{start}_{end}")), { partition: day, now }, { timeoutMs: 5000, registry });
    expect(result.fired).toBe(true);
  });

  it("treats a path below a regular file as absent, not as a failure", async () => {
    await writeFile(path.join(dir, "plain"), "x");
    const result = await checkTrigger(
      fileExists(path.join(dir, "plain", "{partition}")),
      { partition: day, now },
      { timeoutMs: 5000, registry },
    );
    expect(result.fired).toBe(false);
  });
});

describe("httpOk", () => {
  let server: Server;
  let base: string;
  const statuses = new Map<string, number>();
  const seen: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.url ?? "");
      if (req.url === "/hang") return; // never answers
      res.statusCode = statuses.get(req.url ?? "") ?? 404;
      res.end("body");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it("fires when the rendered URL answers the expected status", async () => {
    const spec = httpOk(`${base}/ready/{partition}`);
    expect(await checkTrigger(spec, { partition: day, now }, { timeoutMs: 5000, registry })).toMatchObject({
      fired: false,
      detail: expect.stringContaining("404"),
    });
    expect(seen).toContain("/ready/2025-03-15");
    statuses.set("/ready/2025-03-15", 200);
    expect(await checkTrigger(spec, { partition: day, now }, { timeoutMs: 5000, registry })).toEqual({
      fired: true,
      payload: { url: `${base}/ready/2025-03-15`, status: 200 },
    });
  });

  it("compares against a custom expected status", async () => {
    statuses.set("/gone", 410);
    const result = await checkTrigger(httpOk(`${base}/gone`, { status: 410 }), { now }, { timeoutMs: 5000, registry });
    expect(result.fired).toBe(true);
  });

  it("times out a server that never answers", async () => {
    const err = await checkTrigger(httpOk(`${base}/hang`), { now }, { timeoutMs: 200, registry }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TriggerError);
    expect((err as TriggerError).code).toBe("TRIGGER_CHECK_TIMEOUT");
  });

  it("reports a refused connection as a failed check", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const err = await checkTrigger(httpOk(`http://127.0.0.1:${port}/`), { now }, { timeoutMs: 5000, registry }).catch((e: unknown) => e);
    expect((err as TriggerError).code).toBe("TRIGGER_CHECK_FAILED");
    expect((err as TriggerError).cause).toBeDefined();
  });
});
