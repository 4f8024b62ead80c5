import { GraphQLError } from "graphql";
import type { z } from "zod";
import { AccessDeniedError, AuthenticationError, InputError, TributaryError } from "../../errors/index.js";

/** A GraphQL error whose `extensions.code` clients can match on. */
export function codeError(code: string, message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code } });
}

/** The HTTP status a refusal keeps through GraphQL: 401 for a missing or bad credential, 403 for a missing role. */
export function refusalStatus(err: unknown): 401 | 403 | undefined {
  return err instanceof AccessDeniedError ? 403 : err instanceof AuthenticationError ? 401 : undefined;
}

/** Our own errors keep their code, their message and (a refusal) their HTTP status; anything else is left for masking. */
export function asGraphQLError(err: unknown): unknown {
  if (!(err instanceof TributaryError)) return err;
  const status = refusalStatus(err);
  return new GraphQLError(err.message, { extensions: { code: err.code, ...(status ? { http: { status } } : {}) } });
}

/**
 * Validates a mutation's input object (nulls and absent fields alike left out)
 * with its zod schema; the first problem becomes INPUT_INVALID naming the
 * mutation and the field, e.g. `launchRun: input.maxActiveSteps: …`. A query's
 * arguments pass `root = ""`: `triggers: status: …`.
 */
export function parseInput<T>(schema: z.ZodType<T>, input: unknown, mutation: string, root = "input"): T {
  const present = Object.fromEntries(Object.entries(input as Record<string, unknown>).filter(([, v]) => v !== null && v !== undefined));
  const parsed = schema.safeParse(present);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = [root, issue?.path.join(".") ?? ""].filter(Boolean).join(".");
  throw new InputError(`${mutation}: ${field}: ${issue?.message}`, { code: "INPUT_INVALID" });
}
