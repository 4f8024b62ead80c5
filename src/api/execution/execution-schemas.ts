import { z } from "zod";
import { FAILURE_CLASSES, type SerializedError } from "../../errors/index.js";
import type { DeferRequest, StepOutcome } from "../../execution/index.js";
import { MAX_DYNAMIC_KEYS_PER_CALL } from "../commands/add-dynamic-partitions.js";

// The execution API's bodies: the wire format of the execution contract, checked against its types (a schema whose
// output drifts from StepOutcome or DeferRequest does not compile).

const MAX_TEXT = 64 * 1024;
const shortText = z.string().min(1).max(512);

/** zod leaves no `undefined` keys in what it parses from JSON, so the output fits SerializedError's optional fields. */
const serializedError: z.ZodType<SerializedError> = z.lazy(() =>
  z.object({
    name: z.string().max(512),
    code: z.string().max(512),
    message: z.string().max(MAX_TEXT),
    location: z
      .object({
        file: z.string().max(4096),
        assetKey: z.string().max(4096),
        field: z.string().max(4096),
        partitionKey: z.string().max(4096),
      })
      .partial()
      .optional(),
    stack: z.string().max(MAX_TEXT).optional(),
    cause: serializedError.optional(),
  }),
) as unknown as z.ZodType<SerializedError>;

const jsonText = (what: string, check: (value: unknown) => boolean = () => true) =>
  z.string().refine((text) => {
    try {
      return check(JSON.parse(text));
    } catch {
      return false;
    }
  }, `must be ${what}`);

const deferRequest: z.ZodType<DeferRequest> = z.object({
  kind: shortText,
  args: z.record(z.string(), z.unknown()),
  timeoutMs: z.number().int().min(0),
  pollIntervalMs: z.number().int().min(1),
  softFail: z.boolean(),
});

const outcome: z.ZodType<StepOutcome> = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("success"), outputJson: jsonText("JSON text"), sizeBytes: z.number().int().min(0) }),
  // A worker from before failure classes reports none: its failures count as the user's, as they did then.
  z.object({
    kind: z.literal("failed"),
    error: serializedError,
    retryable: z.boolean(),
    failureClass: z.enum(FAILURE_CLASSES).default("user"),
  }),
  z.object({ kind: z.literal("skipped"), reason: z.string().max(MAX_TEXT) }),
  z.object({ kind: z.literal("deferred"), trigger: deferRequest }),
  z.object({ kind: z.literal("rescheduled"), nextCheckAt: z.number().int().min(0), waitStartedAt: z.number().int().min(0) }),
  z.object({
    kind: z.literal("expanded"),
    count: z.number().int().min(0),
    itemsJson: jsonText("the JSON text of an array", Array.isArray),
    labels: z.array(z.string().max(4096).nullable()).nullable(),
  }),
]);

const instant = z.iso.datetime({ offset: true }).transform((s) => new Date(s));

export const startBody = z.object({
  workerId: shortText,
  hostname: z.string().max(512),
  pid: z.number().int().min(0),
  startedAt: instant,
});

const reportFields = {
  startedAt: instant.nullable(),
  endedAt: instant,
  workerId: shortText,
  hostname: z.string().max(512).optional(),
  pid: z.number().int().min(0).optional(),
};

const finishFields = { outcome, ...reportFields };

/** An `expanded` outcome's count is the number of its items. */
const countMatchesItems = (b: { outcome: StepOutcome }) =>
  b.outcome.kind !== "expanded" || (JSON.parse(b.outcome.itemsJson) as unknown[]).length === b.outcome.count;
const countIssue = { message: "must equal the number of items in outcome.itemsJson", path: ["outcome", "count"] };

export const finishBody = z.object(finishFields).refine(countMatchesItems, countIssue);

/** `POST …/defer`: the same report as finish with a `deferred` outcome, its trigger at the top. */
export const deferBody = z.object({ trigger: deferRequest, ...reportFields });

export const dynamicPartitionsBody = z.object({
  name: z.string().min(1).max(512),
  keys: z.array(z.string().min(1).max(4096)).max(MAX_DYNAMIC_KEYS_PER_CALL),
});

export const materializedQuery = z.object({
  asset: z.string().min(1).max(4096),
  partition: z.string().max(4096).default(""),
});

export const logsQuery = z.object({
  /** Where the chunk starts in the worker's file: a retried chunk is appended once. */
  offset: z.coerce.number().int().min(0).optional(),
});

/** Most tries one batch call carries (`POST /batch/…`); a longer `tries` is a 400 naming the first item beyond. */
export const MAX_BATCH_TRIES = 1000;

/** Which try a batch item is about, and that try's token (the per-try routes' path and bearer header). */
const batchTry = {
  stepId: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  tryNumber: z.number().int().min(1).max(999_999_999),
  token: z.string().max(512),
};

const batchOf = <T extends z.ZodType>(item: T) => z.object({ tries: z.array(item).max(MAX_BATCH_TRIES) });

/** `POST /batch/inputs` and `/batch/heartbeat`: the tries alone. */
export const batchTriesBody = batchOf(z.object(batchTry));
/** `POST /batch/start`: each item is a start body. */
export const batchStartBody = batchOf(z.object({ ...batchTry, ...startBody.shape }));
/** `POST /batch/finish`: each item is a finish body. */
export const batchFinishBody = batchOf(z.object({ ...batchTry, ...finishFields }).refine(countMatchesItems, countIssue));

/** One item's answer in a batch call, in the order of the request. */
export interface BatchItemResult {
  readonly stepId: number;
  readonly tryNumber: number;
  readonly status: 200 | 401 | 403 | 409;
  readonly error?: { readonly code: string; readonly message: string };
  readonly value?: unknown;
}
