import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { sql } from "kysely";
import S3rver from "s3rver";
import { afterEach, expect, it } from "vitest";
import { S3OutputStore } from "../../src/storage/index.js";
import { freePort } from "../cli/run-cli.js";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

// Large outputs go to an S3-compatible server (s3rver, in this process). While it is unreachable, writing an
// output (or reading one as an input) fails the try with a clear error, as an infrastructure failure: the step runs
// again (it has no retries of its own) and gets through once the server is back.
const DEFS = `
import { asset } from "tributary";
export const big = asset({ key: "s3/big" }, async () => ({ blob: "x".repeat(80 * 1024) }));
export const reader = asset({ key: "s3/reader", deps: { big } }, async (_ctx, { big }) => big.blob.length);
`;
const BUCKET = "tributary-outputs";
const CREDENTIALS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };

describePostgres("execution: the S3 output store unreachable while an output is written", () => {
  let h: Harness | undefined;
  let server: S3rver | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await h?.stop();
    await server?.close().catch(() => undefined);
    if (dir) await rm(dir, { recursive: true, force: true });
    h = server = dir = undefined;
  });

  it("fails the try naming the store, as an infrastructure failure, runs it again and writes (then reads) the output once the server is back", async () => {
    dir = await mkdtemp(path.join(tmpdir(), "tributary-s3-outage-"));
    const port = freePort();
    const start = async () => {
      server = new S3rver({ address: "127.0.0.1", port, silent: true, directory: dir! });
      await server.run();
    };
    await start();
    const client = new S3Client({
      endpoint: `http://127.0.0.1:${port}`,
      region: "us-east-1",
      forcePathStyle: true,
      credentials: CREDENTIALS,
    });
    await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    client.destroy();
    await server!.close(); // down before the step writes

    const store = new S3OutputStore({ endpoint: `http://127.0.0.1:${port}`, bucket: BUCKET, prefix: "runs/", ...CREDENTIALS });
    h = await Harness.create({ files: { "big.ts": DEFS }, outputStore: store });
    const runId = await h.launch(["s3/big", "s3/reader"]);
    const failedTry = await h.until(
      async () => {
        const { rows } = await sql<{ error: { code: string; message: string }; failure_class: string }>`
        select t.error, t.failure_class from step_tries t join steps s on s.id = t.step_id
        where s.run_id = ${runId} and s.asset_key = 's3/big' and t.state = 'failed' limit 1`.execute(h!.db);
        return rows[0];
      },
      30_000,
      "the first try to fail",
    );
    expect(failedTry.error.code).toBe("OUTPUT_STORE_UNREACHABLE");
    expect(failedTry.error.message).toContain(`127.0.0.1:${port}`);
    expect(failedTry.failure_class).toBe("infrastructure");

    await start(); // back (its files were kept: the bucket is still there)
    const run = await h.waitForRun(runId, 60_000);
    expect(run.status, await h.describe([runId])).toBe("success");
    const big = run.steps.find((s) => s.assetKey === "s3/big")!;
    expect(big.tryNumber).toBeGreaterThanOrEqual(2);
    const { rows } = await sql<{ storage_ref: string; n: number }>`
      select o.storage_ref, (select count(*)::int from outputs x where x.step_id = o.step_id) as n
      from outputs o where o.step_id = ${big.id}`.execute(h.db);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.storage_ref).toMatch(new RegExp(`^s3://${BUCKET}/runs/outputs/${runId}/`));
    const reader = await sql<{ v: unknown }>`select o.inline_value as v from outputs o join steps s on s.id = o.step_id
                                             where s.run_id = ${runId} and s.asset_key = 's3/reader'`.execute(h.db);
    expect(reader.rows[0]!.v).toBe(80 * 1024);

    // Down again while a reader reads that output: its try fails before its function runs, the store's failure too.
    await server!.close();
    const again = await h.launch(["s3/reader"]);
    const readFailed = await h.until(
      async () => {
        const { rows } = await sql<{ error: { code: string }; failure_class: string; started_at: Date | null }>`
        select t.error, t.failure_class, t.started_at from step_tries t where t.run_id = ${again} and t.state = 'failed' limit 1`.execute(
          h!.db,
        );
        return rows[0];
      },
      30_000,
      "the reader's first try to fail",
    );
    expect(readFailed.error.code).toBe("OUTPUT_STORE_UNREACHABLE");
    expect(readFailed.failure_class).toBe("infrastructure");
    expect(readFailed.started_at).toBeNull();
    await start();
    const reread = await h.waitForRun(again, 60_000);
    expect(reread.status, await h.describe([again])).toBe("success");
  });
});
