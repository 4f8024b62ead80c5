import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { CreateBucketCommand, HeadObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { sql } from "kysely";
import S3rver from "s3rver";
import { afterAll, beforeAll, expect, it } from "vitest";
import { wipePartitions } from "../../src/api/index.js";
import { OutputDeletionsTask } from "../../src/reconciler/index.js";
import { deleteQueuedObjects, PgOutputDeletionStore, PgPartitionWipeStore, S3OutputStore } from "../../src/storage/index.js";
import { freePort } from "../cli/run-cli.js";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

// A wipe whose outputs live in an S3 bucket (s3rver, in this process): the objects go with the wipe; with the server
// down, the wipe still commits, says which objects are left, and a reconciler's task deletes them once it is back.
// Two reconcilers sweeping at once delete each object once.
const DEFS = `
import { asset, daily } from "tributary";
const days = daily({ start: "2025-03-01", end: "2025-03-11" });
export const big = asset({ key: "s3wipe/big", partitions: days }, async (ctx) => ({ day: ctx.partition.key, blob: "x".repeat(60 * 1024) }));
`;
const BUCKET = "tributary-wipes";
const CREDENTIALS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };

describePostgres("partition wipe with outputs in S3", () => {
  let h: Harness;
  let server: S3rver | undefined;
  let dir: string;
  let port: number;
  let client: S3Client;
  let store: S3OutputStore;
  const start = async () => {
    server = new S3rver({ address: "127.0.0.1", port, silent: true, directory: dir });
    await server.run();
  };
  const exists = async (ref: string) => {
    const key = ref.slice(`s3://${BUCKET}/`.length);
    return client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })).then(
      () => true,
      (e: { $metadata?: { httpStatusCode?: number } }) => {
        if (e.$metadata?.httpStatusCode === 404) return false;
        throw e as Error;
      },
    );
  };
  const refsOf = async (keys: readonly string[]) =>
    (
      await sql<{
        storage_ref: string;
      }>`select storage_ref from outputs where asset_key = 's3wipe/big' and partition_key = any(${keys}::text[])
                                         order by storage_ref`.execute(h.db)
    ).rows.map((r) => r.storage_ref);
  const queued = async () => (await sql<{ n: number }>`select count(*)::int as n from output_object_deletions`.execute(h.db)).rows[0]!.n;
  const services = () => ({
    graphs: h.graphs,
    definitions: h.definitions,
    wipes: new PgPartitionWipeStore(h.db),
    deletions: new PgOutputDeletionStore(h.db),
    outputStore: store,
  });

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "tributary-s3-wipe-"));
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
    h = await Harness.create({ files: { "big.ts": DEFS }, outputStore: store });
    const run = await h.waitForRun(await h.launch(["s3wipe/big"], { from: "2025-03-01", to: "2025-03-10" }), 60_000);
    expect(run.status, await h.describe([run.id])).toBe("success");
  }, 180_000);

  afterAll(async () => {
    await h?.stop();
    client?.destroy();
    await server?.close().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  it("deletes the wiped outputs' objects from the bucket with the wipe", async () => {
    const refs = await refsOf(["2025-03-01", "2025-03-02"]);
    expect(refs).toHaveLength(2);
    for (const ref of refs) expect(await exists(ref)).toBe(true);
    const wiped = await wipePartitions(services(), { assetKey: "s3wipe/big", from: "2025-03-01", to: "2025-03-02" }, new Date());
    expect(wiped).toMatchObject({ outputsRemoved: 2, objectCount: 2, objectsDeleted: 2, objectsPending: [] });
    for (const ref of refs) expect(await exists(ref)).toBe(false);
    expect(await queued()).toBe(0);
    // Another partition's object is still there.
    expect(await exists((await refsOf(["2025-03-03"]))[0]!)).toBe(true);
  });

  it("with the store down, commits the wipe and leaves the objects to a reconciler, which deletes them once it answers", async () => {
    const refs = await refsOf(["2025-03-03", "2025-03-04"]);
    await server!.close();
    const wiped = await wipePartitions(services(), { assetKey: "s3wipe/big", partitions: ["2025-03-03", "2025-03-04"] }, new Date());
    expect(wiped).toMatchObject({ statusesRemoved: 2, outputsRemoved: 2, objectCount: 2, objectsDeleted: 0 });
    expect(wiped.objectsPending.map((p) => p.storageRef).sort()).toEqual(refs);
    expect(wiped.objectsPending[0]!.error).toContain(`127.0.0.1:${port}`);
    // The database has forgotten the outputs; the queue has not.
    expect(await refsOf(["2025-03-03", "2025-03-04"])).toEqual([]);
    expect(await queued()).toBe(2);

    const warnings: string[] = [];
    const task = new OutputDeletionsTask({
      queue: new PgOutputDeletionStore(h.db),
      outputStore: store,
      intervalMs: 0,
      log: (_level, message) => warnings.push(message),
    });
    // Still down: tried, kept, said once per object however often it is tried.
    const later = new Date(Date.now() + 3_600_000);
    await task.run(later);
    await task.run(new Date(later.getTime() + 3_600_000));
    expect(await queued()).toBe(2);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/^could not delete s3:\/\/tributary-wipes\/runs\/.* trying again later: /);
    const pending = await new PgOutputDeletionStore(h.db).pending();
    expect(pending.count).toBe(2);
    expect(pending.lastError).toContain("did not answer");

    await start();
    for (const ref of refs) expect(await exists(ref)).toBe(true);
    await task.run(new Date(later.getTime() + 4 * 3_600_000));
    expect(await queued()).toBe(0);
    for (const ref of refs) expect(await exists(ref)).toBe(false);
  });

  it("two reconcilers sweeping at once claim disjoint objects and delete each once", async () => {
    const keys = ["2025-03-05", "2025-03-06", "2025-03-07", "2025-03-08", "2025-03-09", "2025-03-10"];
    const refs = await refsOf(keys);
    // Queued without deleting: as if the wiping process had died right after its commit.
    const wiped = await new PgPartitionWipeStore(h.db).wipe({ assetKey: "s3wipe/big", partitionKeys: keys, reason: null }, new Date());
    expect(wiped.objectDeletions).toHaveLength(6);
    const queue = new PgOutputDeletionStore(h.db);
    const now = new Date(Date.now() + 1_000);
    const [a, b] = await Promise.all([
      deleteQueuedObjects(queue, store, now, { limit: 4 }),
      deleteQueuedObjects(new PgOutputDeletionStore(h.db), store, now, { limit: 4 }),
    ]);
    expect(a.failed).toEqual([]);
    expect(b.failed).toEqual([]);
    // Each claim takes what the other has not locked: together, every object once (a later sweep takes any rest).
    const rest = await deleteQueuedObjects(queue, store, now, { limit: 10 });
    expect(a.deleted + b.deleted + rest.deleted).toBe(6);
    expect(await queued()).toBe(0);
    for (const ref of refs) expect(await exists(ref)).toBe(false);
  });
});
