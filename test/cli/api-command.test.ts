import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { launchRun } from "../../src/api/index.js";
import { GraphCache, PgDefinitionStore, PgRunStore } from "../../src/storage/index.js";
import { storeDefinitions, chainSource } from "../api/graphql-fixture.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { eventually, graphqlAt, runCli, startCli } from "./run-cli.js";
import { RUN_DECISIONS } from "../../src/planner/index.js";

// `tributary api`: the HTTP server alone, as a real child process over a test Postgres database.
describePostgres("tributary api", () => {
  const database = useTestDatabase();
  let removeDefinitions: () => Promise<void>;
  let logsDir: string;

  beforeAll(async () => {
    removeDefinitions = await storeDefinitions(database.db, chainSource(3));
    logsDir = await mkdtemp(path.join(tmpdir(), "tributary-api-logs-"));
  }, 60_000);
  afterAll(async () => {
    await removeDefinitions?.();
    await rm(logsDir, { recursive: true, force: true });
  });

  /** A step that is running as far as the database knows (claimed and started here), with one log line written. */
  async function runningStep(): Promise<{ runId: string; stepId: number }> {
    const definitions = new PgDefinitionStore(database.db);
    const runs = new PgRunStore(database.db, RUN_DECISIONS);
    const { runId } = await launchRun(
      { graphs: new GraphCache(definitions), runs, definitions },
      { assetKeys: ["chain/a000"], partition: "2025-01-02" },
      new Date(),
    );
    const [claim] = await runs.claimRunnable({ now: new Date(), capacity: { local: 1 }, limit: 1 });
    await runs.markStarted(
      [{ stepId: claim!.stepId, tryNumber: 1, workerId: "test", hostname: "test", pid: 1, startedAt: new Date() }],
      new Date(),
    );
    await mkdir(path.join(logsDir, runId), { recursive: true });
    await writeFile(path.join(logsDir, runId, `${claim!.stepId}-1.log`), "2025-01-02T00:00:00.000Z INFO hello from the step\n");
    return { runId, stepId: claim!.stepId };
  }

  it("serves /healthz, /graphql, /api/v1, /readyz, /metrics and step logs; exits 0 on SIGTERM", async () => {
    const child = startCli(["api", "--port", "0", "--insecure-no-auth"], {
      env: { DATABASE_URL: database.url, TRIBUTARY_LOGS_DIR: logsDir },
    });
    try {
      const port = await eventually(
        async () => Number(/serving the API at http:\/\/127\.0\.0\.1:(\d+)/.exec(child.output())?.[1]) || undefined,
        60_000,
        () => `the server to listen\n${child.output()}`,
      );
      const base = `http://127.0.0.1:${port}`;
      // Without access control, said on every start.
      expect(child.output()).toContain("WARNING: access control is off (--insecure-no-auth): anyone who can reach 127.0.0.1 may launch");
      const health = await fetch(`${base}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: "ok" });
      // Idle connections outlive a client's own keep-alive (Node's fetch lets go after 4 s): a client never reuses one
      // the server is closing at that moment, which it would see as a reset.
      expect(health.headers.get("keep-alive")).toBe("timeout=65");

      const { data, errors } = await graphqlAt<{ assets: { key: string }[] }>(port, "{ assets { key } }");
      expect(errors).toBeUndefined();
      expect(data!.assets.map((a) => a.key)).toEqual(["chain/a000", "chain/a001", "chain/a002"]);

      const dags = await fetch(`${base}/api/v1/dags`);
      expect(dags.status).toBe(200);
      expect(((await dags.json()) as { total_entries: number }).total_entries).toBeGreaterThan(0);

      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      expect(await (await fetch(`${base}/metrics`)).text()).toContain("tributary_");

      const logs = await fetch(`${base}/runs/00000000-0000-4000-8000-000000000000/steps/1/logs`);
      expect(logs.status).toBe(404);
      expect(((await logs.json()) as { error: { code: string } }).error.code).toBe("RUN_NOT_FOUND");
      // No reconciler in this process: it serves, it does not schedule.
      expect(child.output()).not.toMatch(/reconciler .* is running/);

      // A followed log of a running step keeps its connection open; SIGTERM still stops the server.
      const { runId, stepId } = await runningStep();
      const follow = await fetch(`${base}/runs/${runId}/steps/${stepId}/logs`);
      expect(follow.headers.get("content-type")).toContain("text/event-stream");
      const reader = follow.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      expect(first).toContain("event: log\ndata: 2025-01-02T00:00:00.000Z INFO hello from the step\n");
      child.kill("SIGTERM");
      // The stream ends (the server closed it) instead of hanging.
      await reader.read().then(
        async function drain(r): Promise<void> {
          if (!r.done) return reader.read().then(drain);
        },
        () => undefined,
      );
    } finally {
      if (!child.killed) child.kill("SIGTERM");
    }
    const code = await new Promise<number | null>((resolve) =>
      child.exitCode !== null ? resolve(child.exitCode) : child.once("exit", resolve),
    );
    expect(code, child.output()).toBe(0);
    expect(child.output()).toContain("SIGTERM: stopping");
  }, 90_000);

  it("answers to TRIBUTARY_PUBLIC_HOSTS and CORS for TRIBUTARY_CORS_ORIGINS; a worker at another name is told what to set", async () => {
    const child = startCli(["api", "--port", "0", "--host", "0.0.0.0", "--insecure-no-auth"], {
      env: {
        DATABASE_URL: database.url,
        TRIBUTARY_LOGS_DIR: logsDir,
        TRIBUTARY_PUBLIC_HOSTS: "tributary.example, api.internal:3000",
        TRIBUTARY_CORS_ORIGINS: "https://app.example",
      },
    });
    try {
      const port = await eventually(
        async () => Number(/serving the API at http:\/\/0\.0\.0\.0:(\d+)/.exec(child.output())?.[1]) || undefined,
        60_000,
        () => `the server to listen\n${child.output()}`,
      );
      const status = (host: string) => statusWithHost(port, host);
      expect(await status(`127.0.0.1:${port}`)).toBe(200);
      expect(await status(`tributary.example:${port}`)).toBe(200);
      expect(await status(`api.internal:${port}`)).toBe(421);
      expect(await status(`rebound.example:${port}`)).toBe(421);
      const cors = await fetch(`http://127.0.0.1:${port}/healthz`, { headers: { origin: "https://app.example" } });
      expect(cors.headers.get("access-control-allow-origin")).toBe("https://app.example");

      // 127.0.0.2 reaches this server (it listens on every address) but is not one of its names.
      const worker = await runCli(["worker", "--url", `http://127.0.0.2:${port}`], {
        env: { DATABASE_URL: "", REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" },
      });
      expect(worker.code).not.toBe(0);
      expect(worker.stderr).toContain(
        `the Tributary server at http://127.0.0.2:${port} refused the request: this server does not answer to the host name ` +
          `"127.0.0.2:${port}": add it to TRIBUTARY_PUBLIC_HOSTS`,
      );
    } finally {
      child.kill("SIGTERM");
    }
  }, 90_000);

  it("refuses browser-safety settings that are not lists of names or origins, naming the variable", async () => {
    const cases: [Record<string, string>, string][] = [
      [
        { TRIBUTARY_CORS_ORIGINS: "*" },
        `environment variable TRIBUTARY_CORS_ORIGINS: "*" is not allowed: CORS with credentials needs each origin listed`,
      ],
      [
        { TRIBUTARY_PUBLIC_HOSTS: "https://tributary.example" },
        `environment variable TRIBUTARY_PUBLIC_HOSTS: "https://tributary.example" is not a host name`,
      ],
    ];
    const results = await Promise.all(
      cases.map(([env]) => runCli(["api", "--port", "0"], { env: { DATABASE_URL: database.url, ...env } })),
    );
    results.forEach((result, i) => {
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain(cases[i]![1]);
    });
  }, 60_000);

  it("refuses to start with access control and no admin, saying how to create one (ACCESS_NOT_CONFIGURED)", async () => {
    const r = await runCli(["api", "--port", "0"], { env: { DATABASE_URL: database.url } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("[ACCESS_NOT_CONFIGURED] access control is on but no admin exists");
    expect(r.stderr).toContain("`tributary users create admin --admin --password-stdin`");
    expect(r.stderr).not.toContain("serving the API");
  }, 60_000);

  it("refuses a --port that is not a port number, naming the option", async () => {
    const ports = ["http", "70000"];
    const results = await Promise.all(
      ports.map((port) => runCli(["api", "--port", port, "--insecure-no-auth"], { env: { DATABASE_URL: database.url } })),
    );
    results.forEach((result, i) => {
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain(`--port: "${ports[i]}" is not a port number`);
    });
  }, 60_000);
});

/** The status of GET /healthz sent with this Host header. */
function statusWithHost(port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path: "/healthz", headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on("error", reject);
    req.end();
  });
}
