import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describePostgres, useCommandStore } from "../support/pg.js";
import { CLI_COMMAND_BUDGET_MS, DEV_START_BUDGET_MS, eventually, graphqlAt, ROOT, runCli, startDev, type DevServer } from "./run-cli.js";

// What a process loads costs every start: packages that only some setups use (Redis, S3, sign-in) are imported when
// a setting asks for them, not by `tributary dev` on the embedded database.
const OPTIONAL_PACKAGES = ["bullmq", "ioredis", "@aws-sdk/client-s3", "openid-client", "@node-rs/argon2", "jose"];
const RECORD_LOADS = path.join(ROOT, "test/fixtures/record-package-loads.mjs");

let dir: string;
let dev: DevServer | undefined;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tributary-startup-imports-"));
});
afterAll(async () => {
  await dev?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("tributary dev on the embedded database", () => {
  it(
    "serves, plans and runs the demo's steps without loading BullMQ, the S3 SDK or the sign-in libraries",
    async () => {
      dev = await startDev({ dataDir: path.join(dir, "data"), seed: true, env: { NODE_OPTIONS: `--import=${RECORD_LOADS}` } });
      // A run of the demo's automation that succeeded: the reconciler, the executor and its worker processes are up.
      await eventually(
        async () => {
          const r = await graphqlAt<{ runs: { status: string }[] }>(dev!.port, "{ runs(first: 100) { status } }");
          return r.data?.runs.some((run) => run.status === "success") ? true : undefined;
        },
        DEV_START_BUDGET_MS,
        "a run of the demo to succeed",
      );
      const loaded = new Set([...dev.output().matchAll(/^package-load: (\S+)$/gm)].map((m) => m[1]!));
      expect(loaded).toContain("@electric-sql/pglite"); // the recording works
      expect(OPTIONAL_PACKAGES.filter((p) => loaded.has(p))).toEqual([]);
    },
    DEV_START_BUDGET_MS,
  );
});

// GraphQL (graphql-js, yoga, Pothos) and PGlite are half of what the CLI could load: a command that works in its own
// process on Postgres, without serving, loads neither. From the sources, where each is a package of its own (the
// precompiled CLI bundles the GraphQL packages into its chunks).
describePostgres("a one-off command on Postgres", () => {
  const at = useCommandStore("tributary-startup-imports-");
  it(
    "lists runs without loading GraphQL or the embedded database",
    async () => {
      const r = await runCli(["runs", "--json", "--data-dir", at.dataDir, "--url", "http://127.0.0.1:9"], {
        env: { ...at.env, TRIBUTARY_RUN_SOURCES: "1", NODE_OPTIONS: `--import=${RECORD_LOADS}` },
      });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual({ runs: [] });
      const loaded = new Set([...r.stderr.matchAll(/^package-load: (\S+)$/gm)].map((m) => m[1]!));
      expect(loaded).toContain("kysely"); // the recording works
      expect(["graphql", "graphql-yoga", "@pothos/core", "@electric-sql/pglite"].filter((p) => loaded.has(p))).toEqual([]);
    },
    CLI_COMMAND_BUDGET_MS,
  );
});
