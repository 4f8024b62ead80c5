// Which GraphQL fields list partitions, and how many each lists at most: the
// query limits add them up (times the lists around them) and refuse an
// operation that asks for more than QueryLimits.maxPartitions in total.

/** The largest page `Asset.partitions` returns (`first` or `last`). */
export const MAX_PARTITION_PAGE = 10_000;

/** An argument's value as the request gives it (literal or variable), else its default; undefined when neither. */
export type ArgumentOf = (name: string) => unknown;

/**
 * Partitions listed per field, by `Type.field`. Each is an upper bound known
 * before the query runs, from the field's arguments. `partitionStatus.ranges`
 * is not one: it lists a range per run of partitions with one status (the
 * data decides how many, not the request, and they are folded once per
 * server and asset).
 */
export const PARTITION_LISTS: Readonly<Record<string, (arg: ArgumentOf) => number>> = {
  // A page of partitions: the last `last` of them, else the first `first`.
  "Asset.partitions": (arg) => count(arg("last")) ?? count(arg("first")) ?? 0,
  // The impact closure starts from the source partitions named (and lists at least as many).
  "Query.erasureImpact": (arg) => (Array.isArray(arg("partitionKeys")) ? (arg("partitionKeys") as unknown[]).length : 1),
  // An erasure request computes the same closure from the source partitions in its input.
  "Mutation.requestErasure": (arg) => {
    const input = arg("input") as { partitionKeys?: unknown } | undefined;
    return Array.isArray(input?.partitionKeys) ? input.partitionKeys.length : 1;
  },
};

function count(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? Math.max(0, value) : undefined;
}
