import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { PutObjectCommand, CreateBucketCommand } from "@aws-sdk/client-s3";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { s3ObjectExists } from "../../src/sdk/index.js";
import { builtInTriggers, checkTrigger, s3ClientFromEnv, TriggerError } from "../../src/trigger-checks/index.js";

const now = new Date();

describe("s3ObjectExists against an in-process S3 server", () => {
  let dir: string;
  let server: S3rver;
  let env: Record<string, string>;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "tributary-s3rver-"));
    server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: dir });
    const address: AddressInfo = await server.run();
    // s3rver accepts these fixed credentials.
    env = {
      S3_ENDPOINT: `http://127.0.0.1:${address.port}`,
      S3_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "S3RVER",
      AWS_SECRET_ACCESS_KEY: "S3RVER",
    };
    const client = await s3ClientFromEnv(env);
    await client.send(new CreateBucketCommand({ Bucket: "landing" }));
    client.destroy();
  });
  afterAll(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("waits for the partition's object, then fires with its size and etag", async () => {
    const registry = builtInTriggers({ env });
    const spec = s3ObjectExists("landing", "orders/{partition}.json");
    const partition = { key: "2025-03-15" };
    expect(await checkTrigger(spec, { partition, now }, { timeoutMs: 10_000, registry })).toMatchObject({ fired: false });

    const client = await s3ClientFromEnv(env);
    await client.send(new PutObjectCommand({ Bucket: "landing", Key: "orders/2025-03-15.json", Body: '{"n":1}' }));
    client.destroy();

    const result = await checkTrigger(spec, { partition, now }, { timeoutMs: 10_000, registry });
    expect(result).toMatchObject({ fired: true, payload: { bucket: "landing", key: "orders/2025-03-15.json", size: 7 } });
    if (!result.fired) throw new Error("unreachable");
    expect((result.payload as { etag: string }).etag).toMatch(/^"[0-9a-f]{32}"$/);
  });

  it("reports an unreachable endpoint as a failed check, not as 'not yet'", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const registry = builtInTriggers({ env: { ...env, S3_ENDPOINT: `http://127.0.0.1:${port}` } });
    const err = await checkTrigger(s3ObjectExists("landing", "x"), { now }, { timeoutMs: 20_000, registry }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TriggerError);
    expect((err as TriggerError).code).toBe("TRIGGER_CHECK_FAILED");
    expect((err as TriggerError).cause).toBeDefined();
  });
});
