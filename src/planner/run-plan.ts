/**
 * One (asset, partition) of a run, Airflow's task instance. `upstream` holds
 * the indices of the steps of the same plan it reads, ascending; they all
 * come before it.
 */
export interface PlannedStep {
  readonly index: number;
  readonly assetKey: string;
  /** `''` for an unpartitioned asset. */
  readonly partitionKey: string;
  readonly upstream: readonly number[];
  /**
   * Set on the step of an asset check: it runs the check of that name on the
   * partition right after the asset's step (its only upstream). A blocking
   * check's step is also an upstream of every step that reads the partition.
   */
  readonly check?: string;
}

/**
 * Upstream partitions that steps of the plan read but that neither the plan
 * nor a current materialisation provides. One entry per (upstream asset,
 * reading asset, reason).
 */
export interface MissingUpstream {
  /** The upstream asset whose partitions are missing. */
  readonly assetKey: string;
  /** The planned asset that reads them. */
  readonly neededBy: string;
  /**
   * - `not_materialized`: the partitions exist but are not materialised and not
   *   in the plan (plan with `includeUpstream` to add them; a source asset's
   *   are observed, never planned);
   * - `not_existing`: the mapping reads partitions that do not exist at `now`
   *   (before the start, window not closed, unknown key).
   */
  readonly reason: "not_materialized" | "not_existing";
  readonly count: number;
  /** Up to 10 of their keys, oldest first. */
  readonly sample: readonly string[];
  /** The same in words, for people. */
  readonly detail: string;
}

/** What a run executes: steps in topological order, and what they lack. */
export interface RunPlan {
  /** The definitions snapshot version the plan was made from. */
  readonly version: number;
  readonly steps: readonly PlannedStep[];
  readonly missing: readonly MissingUpstream[];
}
