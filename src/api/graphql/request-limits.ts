import type { Plugin } from "graphql-yoga";
import type { CallerKey } from "../http/caller-key.js";
import {
  DEFAULT_MAX_MUTATIONS,
  DEFAULT_MUTATION_RATE,
  DEFAULT_QUERY_LIMITS,
  type MutationRate,
  type QueryLimits,
} from "./limit-defaults.js";
import { useQueryLimits } from "./limits.js";
import { useMutationLimit } from "./mutation-limits.js";
import { useMutationRateLimit } from "./mutation-rate-limit.js";

/** How much one request, and one caller, may ask of `/graphql` (docs/security.md); each field has a default. */
export interface RequestLimitOptions {
  /** Depth, cost and partitions per operation (default DEFAULT_QUERY_LIMITS). */
  query?: Partial<QueryLimits>;
  /** Root mutation fields per operation (default 10). */
  maxMutations?: number;
  /** Mutations per caller (default 60 a minute, bursts of 30); false: unlimited. Kept in this process's memory. */
  mutationRate?: MutationRate | false;
  /** Who a request comes from, for the mutation rate (default: its Authorization header's hash, else its address). */
  callerKey?: CallerKey;
}

/** Yoga's plugins for the limits, in the order they refuse: cost and depth, mutations per request, then the rate. */
export function requestLimitPlugins(options: RequestLimitOptions = {}): Plugin[] {
  const rate = options.mutationRate ?? DEFAULT_MUTATION_RATE;
  return [
    useQueryLimits({ ...DEFAULT_QUERY_LIMITS, ...options.query }),
    useMutationLimit(options.maxMutations ?? DEFAULT_MAX_MUTATIONS),
    ...(rate === false ? [] : [useMutationRateLimit(rate)]),
  ];
}
