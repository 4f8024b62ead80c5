import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { CreateBucketCommand, HeadObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { sql } from "kysely";
import S3rver from "s3rver";
import { afterAll, beforeAll, expect, it } from "vitest";
import { erasureReport, launchBackfill, requestErasure, type ErasureServices } from "../../src/api/index.js";
import { BackfillTask, ErasureTask } from "../../src/reconciler/index.js";
import { PgBackfillStore, PgErasureStore, PgLineageStore, PgOutputDeletionStore, S3OutputStore } from "../../src/storage/index.js";
import { freePort } from "../cli/run-cli.js";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

// An erasure whose outputs live in an S3 bucket (s3rver, in this process) while the bucket's server is down: the
// request erases what the database holds, waits (saying why) for the objects, and goes on once the server answers —
// every object deleted and recorded, none missed, nothing re-materialised before they are gone.
const DEFS = `
import { asset, staticPartitions } from "tributary";
const people = staticPartitions(["p1", "p2"]);
export const profiles = asset({ key: "s3er/profiles", partitions: people },
  async (ctx) => ({ person: ctx.partition.key, blob: "x".repeat(60 * 1024) }));
export const derived = asset({ key: "s3er/derived", partitions: people, deps: { profiles } },
  async (_ctx, { profiles }) => ({ person: profiles.person, blob: "y".repeat(60 * 1024) }));
`;
const BUCKET = "tributary-erasures";
const CREDENTIALS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };

describePostgres("erasure with outputs in S3", () => {
  let h: Harness;
  let server: S3rver | undefined;
  let dir: string;
  let port: number;
  let client: S3Client;
  let store: S3OutputStore;
  let services: ErasureServices;
  const start = async () => {
    server = new S3rver({ address: "127.0.0.1", port, silent: true, directory: dir });
    await server.run();
  };
  const exists = async (ref: string) =>
    client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: ref.slice(`s3://${BUCKET}/`.length) })).then(
      () => true,
      (e: { $metadata?: { httpStatusCode?: number } }) => {
        if (e.$metadata?.httpStatusCode === 404) return false;
        throw e as Error;
      },
    );
  const refsOf = async (partitionKey: string) =>
    (
      await sql<{ storage_ref: string }>`select storage_ref from outputs where partition_key = ${partitionKey} and storage_ref is not null
                                         order by storage_ref`.execute(h.db)
    ).rows.map((r) => r.storage_ref);

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "tributary-s3-erasure-"));
    port = freePort();
    await start();
    client = new S3Client({ endpoint: `http://127.0.0.1:${port}`, region: "us-east-1", forcePathStyle: true, credentials: CREDENTIALS });
    await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    store = new S3OutputStore({
      endpoint: `http://127.0.0.1:${port}`,
      bucket: BUCKET,
      prefix: "runs/",
      requestTimeoutMs: 2_000,
      ...CREDENTIALS,
    });
    h = await Harness.create({
      files: { "people.ts": DEFS },
      outputStore: store,
      tasks: (s) => [new BackfillTask({ backfills: new PgBackfillStore(s.handle.db), graphs: s.graphs, definitions: s.definitions })],
    });
    services = { graphs: h.graphs, definitions: h.definitions, lineage: new PgLineageStore(h.db), erasures: new PgErasureStore(h.db) };
    const run = await h.waitForRun(await h.launch(["s3er/profiles", "s3er/derived"], { from: "p1", to: "p2" }), 60_000);
    expect(run.status, await h.describe([run.id])).toBe("success");
  }, 180_000);

  afterAll(async () => {
    await h?.stop();
    client?.destroy();
    await server?.close().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  it("with the store down, erases what the database holds, waits for the objects, and goes on once it answers", async () => {
    const refs = await refsOf("p1");
    expect(refs).toHaveLength(2);
    const other = (await refsOf("p2"))[0]!;
    const task = new ErasureTask({
      store: new PgErasureStore(h.db),
      deletions: new PgOutputDeletionStore(h.db),
      outputStore: store,
      logsDir: h.logsDir,
      graphs: h.graphs,
      lineage: new PgLineageStore(h.db),
      definitions: h.definitions,
      backfills: {
        launch: async (r) =>
          (
            await launchBackfill(
              { graphs: h.graphs, runs: h.runs, definitions: h.definitions, backfills: new PgBackfillStore(h.db) },
              { assetKeys: r.assetKeys, assetPartitions: r.assetPartitions },
              new Date(),
            )
          ).id,
        status: async (id) => (await new PgBackfillStore(h.db).get(id))?.status,
      },
      importHook: async () => undefined,
    });
    const id = (await requestErasure(services, { assetKey: "s3er/profiles", partitionKeys: ["p1"] }, new Date())).request!.id;

    await server!.close();
    await task.work();
    const waiting = (await services.erasures.get(id))!;
    expect(waiting.state).toBe("erasing");
    expect(waiting.message).toMatch(/^waiting for 2 object\(s\) to be deleted from the object store/);
    expect(waiting.erasedCount).toBe(2);
    expect(await refsOf("p1")).toEqual([]);
    let report = await erasureReport(services, id);
    expect(
      report.deletions
        .filter((d) => d.kind === "output")
        .map((d) => d.ref)
        .sort(),
    ).toEqual(refs);
    expect(report.deletions.filter((d) => d.kind === "object")).toEqual([]);

    await start();
    for (const ref of refs) expect(await exists(ref)).toBe(true);
    const done = await h.until(
      async () => {
        await task.work();
        const r = (await services.erasures.get(id))!;
        return r.state === "done" || r.state === "failed" ? r : undefined;
      },
      90_000,
      "the erasure to end",
    );
    expect(done.state, done.message ?? "").toBe("done");
    for (const ref of refs) expect(await exists(ref)).toBe(false);
    expect(await exists(other)).toBe(true);
    report = await erasureReport(services, id);
    expect(
      report.deletions
        .filter((d) => d.kind === "object")
        .map((d) => d.ref)
        .sort(),
    ).toEqual(refs);
    // Re-materialised from the source, into new objects.
    const again = await refsOf("p1");
    expect(again).toHaveLength(2);
    for (const ref of again) expect(refs).not.toContain(ref);
    for (const item of report.items) expect(item.replacedByRunId, item.assetKey).not.toBeNull();
  }, 180_000);
});
