import { GraphError } from "../errors/index.js";

export type GraphProblemCode =
  /** Assets that (transitively) depend on themselves. */
  | "GRAPH_CYCLE"
  /** Two definitions with the same key. */
  | "GRAPH_DUPLICATE_KEY"
  /** A dependency on a key no definition has. */
  | "GRAPH_UNKNOWN_DEPENDENCY"
  /** A partition mapping that does not fit the two partitions definitions. */
  | "GRAPH_INCOMPATIBLE_MAPPING"
  /** A dependency whose default mapping reads many upstream partitions: the mapping must be stated. */
  | "GRAPH_MAPPING_REQUIRED"
  /** A check attached to a key no asset has. */
  | "GRAPH_UNKNOWN_CHECK_ASSET"
  /** Two checks with the same name on one asset. */
  | "GRAPH_DUPLICATE_CHECK"
  /** A check's `partitions` that do not fit its asset's partitions. */
  | "GRAPH_CHECK_PARTITIONS_INVALID"
  /** Excluded because something it depends on was excluded. */
  | "GRAPH_UPSTREAM_EXCLUDED";

/**
 * One thing wrong with the asset graph, recorded against the one definition
 * it leaves out of the active graph: the asset `assetKey` exported as
 * `exportName` from `file`, or its check `checkName`. Plain JSON, so storage
 * and the API keep it as is.
 */
export interface GraphProblem {
  readonly code: GraphProblemCode;
  /** Says what is wrong, where (file, asset, field) and what to do about it. */
  readonly message: string;
  /** The file of the excluded definition. */
  readonly file: string | null;
  /** Every file involved: both files of a duplicate, each file on a cycle. */
  readonly files: readonly string[];
  readonly assetKey: string | null;
  /** The export the excluded definition was found under. */
  readonly exportName: string | null;
  /** Set when the excluded definition is a check. */
  readonly checkName: string | null;
  /** The field at fault, e.g. `deps.orders`. */
  readonly field: string | null;
}

/** The problem as a throwable GraphError (code, message and location kept). */
export function graphProblemToError(problem: GraphProblem): GraphError {
  return new GraphError(problem.code, problem.message, {
    location: {
      ...(problem.file !== null ? { file: problem.file } : {}),
      ...(problem.assetKey !== null ? { assetKey: problem.assetKey } : {}),
      ...(problem.field !== null ? { field: problem.field } : {}),
    },
  });
}

export function compareProblems(a: GraphProblem, b: GraphProblem): number {
  return (
    cmp(a.file ?? "", b.file ?? "") ||
    cmp(a.assetKey ?? "", b.assetKey ?? "") ||
    cmp(a.checkName ?? "", b.checkName ?? "") ||
    cmp(a.code, b.code) ||
    cmp(a.message, b.message)
  );
}

export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
