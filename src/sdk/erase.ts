/** What an asset's `erase` hook is given besides the partitions. */
export interface EraseContext {
  /** The asset whose data to remove. */
  readonly assetKey: string;
  /** The erasure request, as `tributary erase show <id>` names it. */
  readonly requestId: string;
  /** Why the data is erased, as the request said (null when it gave none). */
  readonly reason: string | null;
  /** The source asset and partitions the erased data came from. */
  readonly source: { readonly assetKey: string; readonly partitionKeys: readonly string[] };
  /** Aborted at the hook's time limit (`eraseTimeout`): stop, the call has failed. */
  readonly signal: AbortSignal;
  /** Kept with the call in the request's proof report (at most 200 lines of 2 000 characters). */
  log(message: string): void;
}

/** The partitions of the asset whose data the hook removes. */
export interface EraseTarget {
  /** Keys of the asset's partitions ([""] for an unpartitioned asset). */
  readonly partitions: readonly string[];
}

/**
 * Removes what the asset wrote outside Tributary (a warehouse table, files) for the given partitions, when an
 * erasure request reaches the asset. Tributary deletes the stored outputs and logs itself, then calls the hook
 * once per request (again only if it threw: the request fails and `tributary erase retry` calls it again), then
 * re-materialises the partitions from the cleaned source. Must be idempotent: a retry may call it for data that
 * is already gone.
 *
 * @example
 * // given deleteProfiles: (customers: readonly string[]) => Promise<number>
 * asset({ key: "shop/customer_profiles", partitions: dynamicPartitions("customers"),
 *   erase: async (ctx, { partitions }) => {
 *     ctx.log(`deleted ${await deleteProfiles(partitions)} rows`);
 *   } },
 *   async (ctx) => ({ customer: ctx.partition.key }));
 */
export type EraseHook = (ctx: EraseContext, target: EraseTarget) => unknown;

/** Default time limit of one call of an erase hook. */
export const DEFAULT_ERASE_TIMEOUT_MS = 10 * 60_000;
