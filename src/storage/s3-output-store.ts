import type * as S3 from "@aws-sdk/client-s3";
import { z } from "zod";
import { StorageError } from "../errors/index.js";
import type { OutputStore } from "./output-store.js";

/** How an S3OutputStore reaches its bucket. Only `bucket` is required. */
export interface S3OutputStoreSettings {
  /** An S3-compatible server (MinIO, Ceph, R2…), e.g. `http://127.0.0.1:9000`; absent: AWS S3 itself. */
  readonly endpoint?: string | undefined;
  /** Default "us-east-1". */
  readonly region?: string | undefined;
  readonly bucket: string;
  /** Put before every key as is (include the trailing "/"); default "". */
  readonly prefix?: string | undefined;
  /** With `secretAccessKey` (and optionally `sessionToken`); absent: the SDK's default credential chain. */
  readonly accessKeyId?: string | undefined;
  readonly secretAccessKey?: string | undefined;
  readonly sessionToken?: string | undefined;
  /** `http://host/bucket/key` rather than `http://bucket.host/key`; default true when `endpoint` is given. */
  readonly forcePathStyle?: boolean | undefined;
  /** An attempt that gets no response for this long fails; default 30 000. */
  readonly requestTimeoutMs?: number | undefined;
}

/** The settings with their defaults applied. */
export interface ResolvedS3OutputStoreSettings {
  readonly endpoint: string | undefined;
  readonly region: string;
  readonly bucket: string;
  readonly prefix: string;
  readonly credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | undefined;
  readonly forcePathStyle: boolean;
  readonly requestTimeoutMs: number;
}

const DEFAULT_REGION = "us-east-1";
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
// Three attempts with the SDK's short backoff: a dead server fails the try in
// well under a second (refused) or a few connect timeouts (unroutable), and
// the step's own retry policy takes over from there.
const MAX_ATTEMPTS = 3;
const MAX_CONNECT_TIMEOUT_MS = 5_000;

// S3's rules for bucket names (virtual-host style needs them; MinIO enforces them too).
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

const settingsSchema = z
  .object({
    endpoint: z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL, e.g. http://127.0.0.1:9000" }).optional(),
    region: z.string().min(1, "must not be empty; e.g. us-east-1").optional(),
    bucket: z
      .string({ error: "the bucket name is required" })
      .min(1, "the bucket name is required")
      .regex(
        BUCKET_NAME,
        "must be a bucket name: 3 to 63 lowercase letters, digits, dots or hyphens, starting and ending with a letter or digit",
      ),
    prefix: z
      .string()
      .refine((p) => !p.startsWith("/"), 'must not start with "/" (S3 keys have no leading slash); e.g. "tributary/"')
      .optional(),
    accessKeyId: z.string().min(1, "must not be empty").optional(),
    secretAccessKey: z.string().min(1, "must not be empty").optional(),
    sessionToken: z.string().min(1, "must not be empty").optional(),
    forcePathStyle: z.boolean().optional(),
    requestTimeoutMs: z.number().int().positive("must be a positive number of milliseconds").optional(),
  })
  .superRefine((s, ctx) => {
    // One key without the other would silently fall back to the default chain: say so instead.
    if (s.accessKeyId !== undefined && s.secretAccessKey === undefined) {
      ctx.addIssue({ code: "custom", path: ["secretAccessKey"], message: "is required when accessKeyId is given" });
    }
    if (s.secretAccessKey !== undefined && s.accessKeyId === undefined) {
      ctx.addIssue({ code: "custom", path: ["accessKeyId"], message: "is required when secretAccessKey is given" });
    }
  });

/**
 * Checks the settings and applies the defaults. A bad setting is a StorageError
 * (code OUTPUT_STORE_SETTING_INVALID) whose `location.field` names it.
 */
export function resolveS3OutputStoreSettings(settings: S3OutputStoreSettings): ResolvedS3OutputStoreSettings {
  const parsed = settingsSchema.safeParse(settings);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.map(String).join(".") || "(settings)";
    throw new StorageError(
      "OUTPUT_STORE_SETTING_INVALID",
      `S3 output store setting "${field}": ${issue?.message ?? parsed.error.message}`,
      {
        location: { field },
      },
    );
  }
  const s = parsed.data;
  return {
    endpoint: s.endpoint,
    region: s.region ?? DEFAULT_REGION,
    bucket: s.bucket,
    prefix: s.prefix ?? "",
    credentials:
      s.accessKeyId !== undefined && s.secretAccessKey !== undefined
        ? { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey, ...(s.sessionToken ? { sessionToken: s.sessionToken } : {}) }
        : undefined,
    forcePathStyle: s.forcePathStyle ?? s.endpoint !== undefined,
    requestTimeoutMs: s.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
  };
}

/** The permission each operation needs, named when the server denies it. */
const S3_PERMISSION = {
  read: "s3:GetObject (and s3:ListBucket, without which a missing key also answers 403)",
  write: "s3:PutObject",
  delete: "s3:DeleteObject",
} as const;

/**
 * Outputs as objects in an S3 bucket (AWS S3 or an S3-compatible server such
 * as MinIO). References are `s3://<bucket>/<prefix><key>`.
 *
 * @example
 * const store = new S3OutputStore({ endpoint: "http://127.0.0.1:9000", bucket: "tributary", prefix: "outputs/" });
 * const ref = await store.put("run-1/step-1.json", JSON.stringify({ rows: 3 }));
 * const body: string = await store.get(ref);
 */
export class S3OutputStore implements OutputStore {
  readonly description: string;

  // Private: it holds the secret key.
  private readonly settings: ResolvedS3OutputStoreSettings;
  /**
   * The SDK and the client, built on first use: the SDK takes a noticeable part of a second to load, which a process
   * that never stores an output should not pay.
   */
  private sdk: Promise<{ s3: typeof S3; client: S3.S3Client }> | undefined;
  /** What error messages call the server: the endpoint, or AWS S3 and the region. */
  private readonly server: string;

  constructor(settings: S3OutputStoreSettings) {
    this.settings = resolveS3OutputStoreSettings(settings);
    const s = this.settings;
    this.server = s.endpoint ?? `AWS S3 (region ${s.region})`;
    this.description = `S3 bucket "${s.bucket}"${s.prefix ? ` under prefix "${s.prefix}"` : ""} at ${this.server}`;
  }

  private s3(): Promise<{ s3: typeof S3; client: S3.S3Client }> {
    const s = this.settings;
    this.sdk ??= import("@aws-sdk/client-s3").then((s3) => ({
      s3,
      client: new s3.S3Client({
        region: s.region,
        ...(s.endpoint !== undefined ? { endpoint: s.endpoint } : {}),
        forcePathStyle: s.forcePathStyle,
        ...(s.credentials ? { credentials: s.credentials } : {}),
        maxAttempts: MAX_ATTEMPTS,
        requestHandler: { connectionTimeout: Math.min(s.requestTimeoutMs, MAX_CONNECT_TIMEOUT_MS), requestTimeout: s.requestTimeoutMs },
        // S3-compatible servers reject or mangle the SDK's newer default checksums.
        requestChecksumCalculation: "WHEN_REQUIRED",
        responseChecksumValidation: "WHEN_REQUIRED",
      }),
    }));
    return this.sdk;
  }

  put(key: string, body: string): Promise<string> {
    return this.putObject(key, body, "application/json");
  }

  putBytes(key: string, body: Uint8Array, contentType: string): Promise<string> {
    return this.putObject(key, body, contentType);
  }

  get(ref: string): Promise<string> {
    return this.getObject(ref, (body) => body.transformToString("utf-8"));
  }

  getBytes(ref: string): Promise<Uint8Array> {
    return this.getObject(ref, (body) => body.transformToByteArray());
  }

  async delete(ref: string): Promise<void> {
    const objectKey = this.objectKeyOf(ref, "delete");
    try {
      const { s3, client } = await this.s3();
      // S3 answers a delete of a missing key with success too.
      await client.send(new s3.DeleteObjectCommand({ Bucket: this.settings.bucket, Key: objectKey }));
    } catch (cause) {
      throw this.storageError(cause, "delete", objectKey, ref);
    }
  }

  private async putObject(key: string, body: string | Uint8Array, contentType: string): Promise<string> {
    if (key === "")
      throw new StorageError("OUTPUT_KEY_INVALID", `output key is empty; ${this.description} needs a key to store an output under`);
    const objectKey = `${this.settings.prefix}${key}`;
    try {
      const { s3, client } = await this.s3();
      await client.send(new s3.PutObjectCommand({ Bucket: this.settings.bucket, Key: objectKey, Body: body, ContentType: contentType }));
    } catch (cause) {
      throw this.storageError(cause, "write", objectKey);
    }
    return this.refOf(objectKey);
  }

  private async getObject<T>(ref: string, readBody: (body: NonNullable<S3.GetObjectCommandOutput["Body"]>) => Promise<T>): Promise<T> {
    const objectKey = this.objectKeyOf(ref, "read");
    try {
      const { s3, client } = await this.s3();
      const res = await client.send(new s3.GetObjectCommand({ Bucket: this.settings.bucket, Key: objectKey }));
      if (!res.Body) throw new Error("the response has no body");
      return await readBody(res.Body);
    } catch (cause) {
      throw this.storageError(cause, "read", objectKey, ref);
    }
  }

  /** The object key of one of this store's references. */
  private objectKeyOf(ref: string, op: "read" | "delete"): string {
    const own = `s3://${this.settings.bucket}/`;
    if (!ref.startsWith(own) || ref.length === own.length) {
      throw new StorageError(
        "OUTPUT_REF_INVALID",
        `output reference "${ref}" is not an object of ${this.description} (expected ${own}<key>); ` +
          `it was written to another output store: configure that store to ${op} it`,
      );
    }
    return ref.slice(own.length);
  }

  private refOf(objectKey: string): string {
    return `s3://${this.settings.bucket}/${objectKey}`;
  }

  /** A StorageError saying what failed, where, and what to check; the SDK's error is the cause. */
  private storageError(cause: unknown, op: "read" | "write" | "delete", objectKey: string, ref = this.refOf(objectKey)): StorageError {
    const e = cause as { name?: string; message?: string; $metadata?: { httpStatusCode?: number; attempts?: number } };
    const status = e.$metadata?.httpStatusCode;
    const attempts = e.$metadata?.attempts;
    const detail = `${e.name ?? "Error"}: ${e.message ?? String(cause)}`;
    const { bucket } = this.settings;
    const object = `object "${objectKey}" in bucket "${bucket}" at ${this.server}`;
    if (e.name === "CredentialsProviderError") {
      return new StorageError(
        "OUTPUT_STORE_CREDENTIALS_MISSING",
        `cannot ${op} output ${ref}: no credentials for ${this.server} (${detail}); ` +
          `set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or configure an AWS profile or role`,
        { cause },
      );
    }
    if (status === undefined) {
      // No HTTP response at all: refused, timed out, DNS, TLS, or a connection dropped mid-body.
      return new StorageError(
        "OUTPUT_STORE_UNREACHABLE",
        `cannot ${op} output ${ref}: the S3 output store at ${this.server} did not answer (${detail})` +
          `${attempts ? ` in ${attempts} attempt${attempts === 1 ? "" : "s"}` : ""}; check that the server is running and that the endpoint and network are right`,
        { cause },
      );
    }
    if (e.name === "NoSuchBucket") {
      return new StorageError(
        "OUTPUT_STORE_BUCKET_MISSING",
        `cannot ${op} output ${ref}: bucket "${bucket}" does not exist at ${this.server}; create it, or fix the bucket setting`,
        { cause },
      );
    }
    if (op === "read" && (e.name === "NoSuchKey" || e.name === "NotFound" || status === 404)) {
      return new StorageError(
        "OUTPUT_NOT_FOUND",
        `output ${ref} not found: there is no ${object}; check that no lifecycle rule or cleanup deleted it, ` +
          `and that this is the bucket the output was written to`,
        { cause },
      );
    }
    if (status === 401 || status === 403) {
      return new StorageError(
        "OUTPUT_STORE_ACCESS_DENIED",
        `cannot ${op} output ${ref}: ${this.server} denied access to ${object} (${detail}); check the credentials and ` +
          `that they may ${S3_PERMISSION[op]} on the bucket`,
        { cause },
      );
    }
    return new StorageError(
      "OUTPUT_STORE_FAILED",
      `cannot ${op} output ${ref}: ${this.server} answered ${status} for ${object} (${detail})`,
      {
        cause,
      },
    );
  }
}
