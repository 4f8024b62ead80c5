import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { CreateBucketCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StorageError } from "../../src/errors/index.js";
import { INLINE_OUTPUT_LIMIT_BYTES, LocalDirOutputStore, S3OutputStore, type OutputStore } from "../../src/storage/index.js";

// One contract for every OutputStore, then what only S3 has: endpoints, prefixes, settings.

const BUCKET = "tributary-outputs";
// s3rver accepts exactly these credentials.
const S3RVER_CREDENTIALS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };

interface S3Server {
  readonly endpoint: string;
  /** A plain SDK client, to look behind the store. */
  readonly client: S3Client;
  close(): Promise<void>;
}

/** s3rver in this process on an ephemeral port, its files in a temp dir, with a fresh bucket. */
async function startS3rver(): Promise<S3Server> {
  const dir = await mkdtemp(path.join(tmpdir(), "tributary-s3rver-"));
  const server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: dir });
  const address = await server.run();
  const endpoint = `http://127.0.0.1:${address.port}`;
  const client = new S3Client({
    endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: S3RVER_CREDENTIALS,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
  return {
    endpoint,
    client,
    close: async () => {
      client.destroy();
      await server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function storageErrorOf(promise: Promise<unknown>): Promise<StorageError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StorageError);
  return err as StorageError;
}

function storageErrorOfSync(fn: () => unknown): StorageError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(StorageError);
    return err as StorageError;
  }
  throw new Error("expected a StorageError, nothing was thrown");
}

interface OpenedStore {
  readonly store: OutputStore;
  /** References this store did not write and must refuse: another kind of store, another bucket. */
  readonly foreignRefs: readonly string[];
  close(): Promise<void>;
}

const stores: { name: string; open: () => Promise<OpenedStore> }[] = [
  {
    name: "LocalDirOutputStore",
    open: async () => {
      const dir = await mkdtemp(path.join(tmpdir(), "tributary-outputs-"));
      return {
        store: new LocalDirOutputStore(dir),
        foreignRefs: [`s3://${BUCKET}/outputs/run/1-1.json`, "outputs/run/1-1.json"],
        close: () => rm(dir, { recursive: true, force: true }),
      };
    },
  },
  {
    name: "S3OutputStore on s3rver",
    open: async () => {
      const s3 = await startS3rver();
      return {
        store: new S3OutputStore({ endpoint: s3.endpoint, bucket: BUCKET, ...S3RVER_CREDENTIALS }),
        foreignRefs: [
          "file:///tmp/outputs/run/1-1.json",
          "s3://another-bucket/outputs/run/1-1.json",
          `s3://${BUCKET}`,
          "outputs/run/1-1.json",
        ],
        close: () => s3.close(),
      };
    },
  },
];

describe.each(stores)("OutputStore contract: $name", ({ open }) => {
  let opened: OpenedStore;
  let store: OutputStore;
  beforeAll(async () => {
    opened = await open();
    store = opened.store;
  });
  afterAll(async () => {
    await opened?.close();
  });

  it("reads back what it stored", async () => {
    const ref = await store.put("round-trip/value.json", '{"rows":3}');
    expect(typeof ref).toBe("string");
    expect(await store.get(ref)).toBe('{"rows":3}');
    expect(store.description.length).toBeGreaterThan(0);
  });

  it("nests keys with /, each its own object", async () => {
    const deep = await store.put("nested/a/b/c.json", '"deep"');
    const shallow = await store.put("nested/a/other.json", '"shallow"');
    expect(deep).not.toBe(shallow);
    expect(await store.get(deep)).toBe('"deep"');
    expect(await store.get(shallow)).toBe('"shallow"');
  });

  it("overwrites on a second put of the same key (an idempotent retry), returning the same reference", async () => {
    const first = await store.put("overwrite/value.json", '{"try":1}');
    const second = await store.put("overwrite/value.json", '{"try":2}');
    expect(second).toBe(first);
    expect(await store.get(second)).toBe('{"try":2}');
  });

  it("round-trips a 5 MB body exactly", async () => {
    const line = JSON.stringify({ id: 123456, name: "row", values: [1.5, -2, 3e10], note: "x".repeat(64) });
    const body = `[${Array.from({ length: Math.ceil((5 * 1024 * 1024) / (line.length + 1)) }, () => line).join(",")}]`;
    expect(Buffer.byteLength(body)).toBeGreaterThan(5 * 1024 * 1024);
    const got = await store.get(await store.put("large/five-mb.json", body));
    expect(got.length).toBe(body.length);
    expect(got === body).toBe(true); // not toBe: a 5 MB diff helps nobody
  });

  it("round-trips UTF-8 (accents, CJK, emoji, right-to-left) exactly", async () => {
    const body = JSON.stringify({ city: "Zürich", tokyo: "東京", emoji: "🌊🚀", rtl: "שלום", combining: "e\u0301", nbsp: "a\u00a0b" });
    expect(await store.get(await store.put("utf8/value.json", body))).toBe(body);
  });

  it("round-trips bytes that are not UTF-8 exactly", async () => {
    const text = "a log line that compresses\n".repeat(200);
    const gzip = gzipSync(text);
    expect(() => new TextDecoder("utf-8", { fatal: true }).decode(gzip)).toThrow();
    const got = await store.getBytes(await store.putBytes("binary/logs.gz", gzip, "application/gzip"));
    expect(got).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(got).equals(gzip)).toBe(true); // not toEqual: a byte-by-byte diff helps nobody
    expect(gunzipSync(got).toString("utf8")).toBe(text);
  });

  it("reads the UTF-8 bytes of an object stored with put", async () => {
    const body = JSON.stringify({ city: "Zürich", emoji: "🌊" });
    const got = await store.getBytes(await store.put("binary/text.json", body));
    expect(Buffer.from(got).equals(Buffer.from(body, "utf8"))).toBe(true);
  });

  it("stores a step's output the way the execution backend does, without the backend", async () => {
    const value = { rows: Array.from({ length: 2_000 }, (_, i) => ({ i, label: `row ${i}` })) };
    const json = JSON.stringify(value);
    expect(Buffer.byteLength(json)).toBeGreaterThan(INLINE_OUTPUT_LIMIT_BYTES);
    const ref = await store.put(`outputs/${randomUUID()}/42-1.json`, json);
    expect(JSON.parse(await store.get(ref))).toEqual(value);
  });

  it("reports a missing output as OUTPUT_NOT_FOUND naming the reference", async () => {
    const present = await store.put("missing/present.json", "{}");
    const missing = present.replace("present.json", "never-written.json");
    expect(missing).not.toBe(present);
    const err = await storageErrorOf(store.get(missing));
    expect(err.code).toBe("OUTPUT_NOT_FOUND");
    expect(err.message).toContain(missing);
  });

  it("reports a missing binary object with getBytes as get does: OUTPUT_NOT_FOUND naming the reference", async () => {
    const present = await store.putBytes("missing/present.gz", gzipSync("present"), "application/gzip");
    const missing = present.replace("present.gz", "never-written.gz");
    expect(missing).not.toBe(present);
    const err = await storageErrorOf(store.getBytes(missing));
    expect(err.code).toBe((await storageErrorOf(store.get(missing))).code);
    expect(err.code).toBe("OUTPUT_NOT_FOUND");
    expect(err.message).toContain(missing);
  });

  it("refuses a reference of another kind of store or another bucket, naming it", async () => {
    for (const ref of opened.foreignRefs) {
      for (const read of [store.get(ref), store.getBytes(ref)]) {
        const err = await storageErrorOf(read);
        expect(err.code).toBe("OUTPUT_REF_INVALID");
        expect(err.message).toContain(`"${ref}"`);
      }
    }
  });

  it("deletes an object, and deleting one that is gone is no error; other objects stay", async () => {
    const doomed = await store.put("delete/doomed.json", '"bye"');
    const kept = await store.put("delete/kept.json", '"stay"');
    await store.delete(doomed);
    expect((await storageErrorOf(store.get(doomed))).code).toBe("OUTPUT_NOT_FOUND");
    await store.delete(doomed);
    expect(await store.get(kept)).toBe('"stay"');
  });

  it("deletes nothing of another store or another bucket, naming the reference", async () => {
    for (const ref of opened.foreignRefs) {
      const err = await storageErrorOf(store.delete(ref));
      expect(err.code).toBe("OUTPUT_REF_INVALID");
      expect(err.message).toContain(`"${ref}"`);
    }
  });
});

describe("LocalDirOutputStore only", () => {
  it("deletes only files inside its directory: a reference that points elsewhere (or climbs out) is refused and kept", async () => {
    const root = await mkdtemp(path.join(tmpdir(), "tributary-outputs-delete-"));
    try {
      const store = new LocalDirOutputStore(path.join(root, "outputs"));
      const outside = path.join(root, "outputs-elsewhere.json");
      await writeFile(outside, "{}");
      for (const ref of [`file://${outside}`, `file://${path.join(root, "outputs", "..", "outputs-elsewhere.json")}`]) {
        const err = await storageErrorOf(store.delete(ref));
        expect(err.code).toBe("OUTPUT_REF_INVALID");
        expect(err.message).toContain(ref);
      }
      expect(await readFile(outside, "utf8")).toBe("{}");
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe("S3OutputStore only", () => {
  let s3: S3Server;
  beforeAll(async () => {
    s3 = await startS3rver();
  });
  afterAll(async () => {
    await s3?.close();
  });

  it("fails fast with OUTPUT_STORE_UNREACHABLE naming the endpoint when nothing listens", async () => {
    const endpoint = `http://127.0.0.1:${await closedPort()}`;
    const store = new S3OutputStore({ endpoint, bucket: BUCKET, ...S3RVER_CREDENTIALS });
    for (const attempt of [
      () => store.put("outputs/x.json", "{}"),
      () => store.get(`s3://${BUCKET}/outputs/x.json`),
      () => store.putBytes("outputs/x.gz", gzipSync("x"), "application/gzip"),
      () => store.getBytes(`s3://${BUCKET}/outputs/x.gz`),
    ]) {
      const started = Date.now();
      const err = await storageErrorOf(attempt());
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(err.code).toBe("OUTPUT_STORE_UNREACHABLE");
      expect(err.message).toContain(endpoint);
      expect(err.message).toContain("check that the server is running");
      expect(err.cause).toBeDefined();
    }
  });

  it("puts the prefix before every key, in the object key and the reference", async () => {
    const store = new S3OutputStore({ endpoint: s3.endpoint, bucket: BUCKET, prefix: "team-a/tributary/", ...S3RVER_CREDENTIALS });
    const ref = await store.put("outputs/run-1/7-1.json", '{"ok":true}');
    expect(ref).toBe(`s3://${BUCKET}/team-a/tributary/outputs/run-1/7-1.json`);
    const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: "team-a/" }));
    expect(listed.Contents?.map((o) => o.Key)).toEqual(["team-a/tributary/outputs/run-1/7-1.json"]);
    expect(await store.get(ref)).toBe('{"ok":true}');
  });

  it("stores the content type: the one given to putBytes, application/json for put", async () => {
    const store = new S3OutputStore({ endpoint: s3.endpoint, bucket: BUCKET, ...S3RVER_CREDENTIALS });
    const contentTypeOf = async (ref: string) =>
      (await s3.client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: ref.slice(`s3://${BUCKET}/`.length) }))).ContentType;
    expect(await contentTypeOf(await store.putBytes("content-type/logs.gz", gzipSync("logs"), "application/gzip"))).toBe(
      "application/gzip",
    );
    expect(await contentTypeOf(await store.put("content-type/value.json", "{}"))).toBe("application/json");
  });

  it("names the bucket when it does not exist", async () => {
    const store = new S3OutputStore({ endpoint: s3.endpoint, bucket: "no-such-bucket", ...S3RVER_CREDENTIALS });
    const err = await storageErrorOf(store.put("outputs/x.json", "{}"));
    expect(err.code).toBe("OUTPUT_STORE_BUCKET_MISSING");
    expect(err.message).toContain('bucket "no-such-bucket" does not exist');
  });

  it("reports refused credentials as OUTPUT_STORE_ACCESS_DENIED", async () => {
    const store = new S3OutputStore({ endpoint: s3.endpoint, bucket: BUCKET, accessKeyId: "nobody", secretAccessKey: "wrong" });
    const err = await storageErrorOf(store.put("outputs/x.json", "{}"));
    expect(err.code).toBe("OUTPUT_STORE_ACCESS_DENIED");
    expect(err.message).toContain(s3.endpoint);
    expect(err.message).toContain("check the credentials");
  });

  it("refuses bad settings with an error naming the setting", () => {
    const cases: [ConstructorParameters<typeof S3OutputStore>[0], string, RegExp][] = [
      [{ bucket: "" }, "bucket", /the bucket name is required/],
      [{ bucket: "Not_A_Bucket" }, "bucket", /must be a bucket name/],
      [{ bucket: BUCKET, endpoint: "not a url" }, "endpoint", /must be an http:\/\/ or https:\/\/ URL/],
      [{ bucket: BUCKET, endpoint: "ftp://127.0.0.1:21" }, "endpoint", /must be an http:\/\/ or https:\/\/ URL/],
      [{ bucket: BUCKET, prefix: "/outputs/" }, "prefix", /must not start with "\/"/],
      [{ bucket: BUCKET, accessKeyId: "key" }, "secretAccessKey", /required when accessKeyId is given/],
      [{ bucket: BUCKET, requestTimeoutMs: 0 }, "requestTimeoutMs", /positive/],
    ];
    for (const [settings, field, detail] of cases) {
      const err = storageErrorOfSync(() => new S3OutputStore(settings));
      expect(err.code).toBe("OUTPUT_STORE_SETTING_INVALID");
      expect(err.location?.field).toBe(field);
      expect(err.message).toContain(`setting "${field}"`);
      expect(err.message).toMatch(detail);
    }
  });
});
