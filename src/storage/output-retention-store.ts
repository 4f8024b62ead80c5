/** What one pass of output retention removed. */
export interface PrunedOutputs {
  readonly outputs: number;
  /** Their objects, queued for deletion from the object store (see OutputDeletionStore). */
  readonly objects: number;
}

/**
 * Output retention: outputs older than a cut-off are deleted, oldest first, at most `limit` per call, except what a
 * step may still read (the outputs of the run behind each partition's latest materialisation, and of unfinished
 * runs). Their objects are queued for deletion by the same call.
 */
export interface OutputRetentionStore {
  prune(options: OutputRetentionPolicy & { readonly limit: number }, now: Date): Promise<PrunedOutputs>;
}

/** Which outputs are past their retention: created before a cut-off of their asset's own, else the default one. */
export interface OutputRetentionPolicy {
  /** The default cut-off (TRIBUTARY_OUTPUT_RETENTION); null: outputs of assets without their own are kept. */
  readonly before: Date | null;
  /** Assets with a retention of their own (`retention.outputs`). */
  readonly assets?: readonly { readonly assetKey: string; readonly before: Date }[];
}
