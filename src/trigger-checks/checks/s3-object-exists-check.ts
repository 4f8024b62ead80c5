import type { S3Client } from "@aws-sdk/client-s3";
import { z } from "zod";
import { defineTriggerCheck, type TriggerCheck } from "../trigger-check.js";

/** Environment variables the S3 client is configured from. */
export type S3Env = Readonly<Record<string, string | undefined>>;

/**
 * An S3 client from S3_ENDPOINT (an S3-compatible server such as MinIO; path
 * style is then used), S3_REGION (default us-east-1) and
 * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN (otherwise the
 * SDK's default credential chain).
 */
export async function s3ClientFromEnv(env: S3Env = process.env): Promise<S3Client> {
  // Loaded on first use: most processes never check S3, and the SDK takes a noticeable part of a second to load.
  const { S3Client } = await import("@aws-sdk/client-s3");
  const endpoint = env.S3_ENDPOINT || undefined;
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  return new S3Client({
    region: env.S3_REGION || env.AWS_REGION || "us-east-1",
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
    ...(accessKeyId && secretAccessKey
      ? { credentials: { accessKeyId, secretAccessKey, ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}) } }
      : {}),
    // S3-compatible servers reject or mangle the SDK's newer default checksums.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
}

/**
 * `s3ObjectExists(bucket, key)`: fires when HeadObject finds the rendered key.
 * A 404 (no such key, or no such bucket: HEAD cannot tell them apart) is "not
 * yet"; any other error (403, network) is a failure.
 *
 * @param client called once, on the first check, so a triggerer without S3 triggers never builds a client
 */
export function s3ObjectExistsCheck(client: () => S3Client | Promise<S3Client>): TriggerCheck<never> {
  let s3: Promise<S3Client> | undefined;
  return defineTriggerCheck({
    schema: z.object({ bucket: z.string().min(1), key: z.string().min(1) }),
    templateArgs: ["key"],
    async check(args, { signal }) {
      // A client that could not be built is built again at the next check.
      const building = (s3 ??= Promise.resolve(client()));
      building.catch(() => {
        if (s3 === building) s3 = undefined;
      });
      const [{ HeadObjectCommand }, s3Client] = await Promise.all([import("@aws-sdk/client-s3"), building]);
      try {
        const head = await s3Client.send(new HeadObjectCommand({ Bucket: args.bucket, Key: args.key }), { abortSignal: signal });
        return {
          fired: true,
          payload: { bucket: args.bucket, key: args.key, size: head.ContentLength ?? null, etag: head.ETag ?? null },
        };
      } catch (err) {
        const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
        if (e.$metadata?.httpStatusCode === 404 || e.name === "NotFound" || e.name === "NoSuchKey") {
          return { fired: false, detail: `s3://${args.bucket}/${args.key} does not exist` };
        }
        throw err;
      }
    },
  });
}
