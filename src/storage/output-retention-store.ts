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
  prune(options: { readonly before: Date; readonly limit: number }, now: Date): Promise<PrunedOutputs>;
}
