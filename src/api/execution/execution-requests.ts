import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { z } from "zod";
import { TributaryError } from "../../errors/index.js";
import { MAX_BATCH_TRIES } from "./execution-schemas.js";

// How the execution API reads requests: bodies within their size, JSON validated with zod, batches of distinct
// tries; and the error a refused request answers with.

/**
 * A request the execution API refuses, with its HTTP status: 400
 * BAD_REQUEST, 401 TOKEN_MISSING / TOKEN_INVALID / TOKEN_EXPIRED, 403
 * TOKEN_SCOPE, 409 TRY_NOT_ACTIVE, 413 BODY_TOO_LARGE.
 */
export class ExecutionApiError extends TributaryError {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 413,
    code: string,
    message: string,
  ) {
    super(code, message);
  }
}

/** Which try a batch item is about, and that try's token. */
export interface BatchTry {
  readonly stepId: number;
  readonly tryNumber: number;
  readonly token: string;
}

export function keyOf(t: { stepId: number; tryNumber: number }): string {
  return `${t.stepId}:${t.tryNumber}`;
}

export function badRequest(message: string): ExecutionApiError {
  return new ExecutionApiError(400, "BAD_REQUEST", message);
}

export function limit(maxSize: number) {
  return bodyLimit({
    maxSize,
    onError: () => {
      throw new ExecutionApiError(413, "BODY_TOO_LARGE", `body: more than the ${maxSize} bytes this call accepts`);
    },
  });
}

/** Validates with zod; the first problem is a 400 naming its field (`body.outcome.kind: …`). */
export function parse<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = [where, ...(issue?.path ?? []).map(String)].join(".");
  throw badRequest(`${field}: ${issue?.message ?? "invalid"}`);
}

export async function jsonBody<T>(c: Context, schema: z.ZodType<T>): Promise<T> {
  return parse(schema, await readJson(c), "body");
}

export async function readJson(c: Context): Promise<unknown> {
  try {
    return JSON.parse(await c.req.text());
  } catch (err) {
    throw badRequest(`body: not valid JSON (${(err as Error).message})`);
  }
}

/** A batch body: at most MAX_BATCH_TRIES items (checked before the items are), each try once. */
export async function batchBody<I extends BatchTry>(c: Context, schema: z.ZodType<{ tries: I[] }>): Promise<{ tries: I[] }> {
  const body = await readJson(c);
  const tries = (body as { tries?: unknown } | null)?.tries;
  if (Array.isArray(tries) && tries.length > MAX_BATCH_TRIES) {
    throw badRequest(
      `body.tries.${MAX_BATCH_TRIES}: a batch carries at most ${MAX_BATCH_TRIES} tries (this one has ${tries.length}); send the rest in another batch`,
    );
  }
  const parsed = parse(schema, body, "body");
  const seen = new Map<string, number>();
  parsed.tries.forEach((item, i) => {
    const first = seen.get(keyOf(item));
    if (first !== undefined)
      throw badRequest(`body.tries.${i}: try ${item.tryNumber} of step ${item.stepId} is already body.tries.${first}; one item per try`);
    seen.set(keyOf(item), i);
  });
  return parsed;
}
