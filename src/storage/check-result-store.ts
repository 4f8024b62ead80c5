// Read-only queries over recorded asset check results (check_results), for
// GraphQL's Asset.checks and Run.checkResults and `tributary check-run`.
import type { JsonValue } from "./json.js";
import type { ReadPage } from "./materialization-query-store.js";

/** One recorded result: a check's verdict on one try of its step (or the error that stopped it reaching one). */
export interface CheckResultView {
  readonly id: number;
  readonly assetKey: string;
  readonly checkName: string;
  /** '' for an unpartitioned asset. */
  readonly partitionKey: string;
  readonly runId: string | null;
  readonly stepId: number | null;
  /** The materialisation event the check judged; null when the step never reached a verdict. */
  readonly eventId: number | null;
  readonly passed: boolean;
  readonly severity: "warn" | "error";
  readonly blocking: boolean;
  readonly metadata: { readonly [key: string]: JsonValue };
  /** Set when the check threw, answered wrong or never ran to a verdict. */
  readonly error: { readonly code: string; readonly message: string } | null;
  readonly tryNumber: number | null;
  readonly createdAt: Date;
}

/** One page of an asset's check results to read. */
export interface CheckResultQuery {
  readonly assetKey: string;
  /** Only this check; undefined for every check of the asset. */
  readonly checkName?: string | undefined;
  /** Only this partition ('' for an unpartitioned asset); undefined for every partition. */
  readonly partitionKey?: string | undefined;
  /** 1 to MAX_READ_PAGE. */
  readonly first: number;
  /** `endCursor` of the previous page. */
  readonly after?: string | undefined;
}

/**
 * Check results, newest first, with opaque cursors. A malformed cursor is an
 * InputError (INPUT_INVALID) naming the `after` field.
 */
export interface CheckResultStore {
  /** Pages for many assets, checks or partitions in one statement, in the order of `queries` (a latest result is a page of 1). */
  checkResults(queries: readonly CheckResultQuery[]): Promise<ReadPage<CheckResultView>[]>;
  /** The results the given runs recorded, oldest first per run, in one statement for many runs. */
  resultsOfRuns(runIds: readonly string[]): Promise<ReadonlyMap<string, readonly CheckResultView[]>>;
}
