import type { GraphQLError } from "graphql";
import { createGraphQLError, type Plugin } from "graphql-yoga";
import { DEFAULT_MUTATION_RATE, type MutationRate } from "./limit-defaults.js";
import { operationOf } from "./limits.js";
import { rootFieldsOf } from "./mutation-limits.js";

/** What the GraphQL context carries for the rate limit: who is asking (see ApiOptions' callerKey). */
export interface CallerContext {
  callerKey?: () => string;
}

/**
 * Token buckets, one per caller key, in this process's memory: each holds up
 * to `burst` tokens and refills at `perMinute` a minute. Buckets that have
 * refilled completely are forgotten, so idle callers cost nothing.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly perMs: number;

  constructor(
    private readonly rate: MutationRate,
    private readonly now: () => number = Date.now,
  ) {
    this.perMs = rate.perMinute / 60_000;
  }

  /** Callers with a bucket that has not refilled (or not been swept since). */
  get size(): number {
    return this.buckets.size;
  }

  /** Takes `n` tokens from `key`'s bucket; when it holds fewer, takes none and says how long until it holds `n`. */
  take(key: string, n: number): { ok: true } | { ok: false; retryAfterMs: number } {
    const now = this.now();
    if (this.buckets.size > 10_000) this.forgetFull(now);
    const bucket = this.buckets.get(key);
    const tokens = bucket ? Math.min(this.rate.burst, bucket.tokens + (now - bucket.at) * this.perMs) : this.rate.burst;
    if (tokens >= n) {
      this.buckets.set(key, { tokens: tokens - n, at: now });
      return { ok: true };
    }
    this.buckets.set(key, { tokens, at: now });
    return { ok: false, retryAfterMs: n > this.rate.burst ? Infinity : Math.ceil((n - tokens) / this.perMs) };
  }

  private forgetFull(now: number): void {
    for (const [key, b] of this.buckets) if (b.tokens + (now - b.at) * this.perMs >= this.rate.burst) this.buckets.delete(key);
  }
}

/**
 * Limits the mutations each caller runs (every root mutation field counts
 * one): over the rate, the whole operation is refused before any resolver
 * runs, with HTTP 429, `Retry-After` in seconds and code RATE_LIMITED.
 * Queries are not limited here (the cost limits bound them).
 */
export function useMutationRateLimit(rate: MutationRate = DEFAULT_MUTATION_RATE, now?: () => number): Plugin {
  const buckets = new TokenBuckets(rate, now);
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const operation = operationOf(args.document, args.operationName ?? undefined);
      if (operation?.operation !== "mutation") return;
      const mutations = Math.max(1, rootFieldsOf(args.document, operation).length);
      const caller = (args.contextValue as CallerContext).callerKey?.() ?? "unknown";
      const taken = buckets.take(caller, mutations);
      if (taken.ok) return;
      setResultAndStopExecution({ errors: [rateLimited(rate, mutations, taken.retryAfterMs)] });
    },
  };
}

function rateLimited(rate: MutationRate, mutations: number, retryAfterMs: number): GraphQLError {
  const limit = `${rate.perMinute} mutations a minute (bursts of up to ${rate.burst})`;
  if (!Number.isFinite(retryAfterMs)) {
    return createGraphQLError(
      `This request runs ${mutations} mutations, more than a caller may run at once (${limit}); send them in smaller requests`,
      { extensions: { code: "RATE_LIMITED", mutations, ...rate, http: { status: 429 } } },
    ) as GraphQLError;
  }
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return createGraphQLError(`Too many mutations from this caller: the limit is ${limit}; retry in ${seconds} s`, {
    extensions: {
      code: "RATE_LIMITED",
      retryAfterSeconds: seconds,
      ...rate,
      http: { status: 429, headers: { "Retry-After": String(seconds) } },
    },
  }) as GraphQLError;
}
