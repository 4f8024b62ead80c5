import { PartitionSubset, type PartitionSpace } from "../../partitions/index.js";

// Partitions in time: which windows became due last at a moment.

/**
 * The partitions that became due last at `at`: the latest time window (across
 * the other dimensions of a multi definition); every partition of a
 * definition without time.
 */
export function latestDue(space: PartitionSpace, at: Date): PartitionSubset {
  const count = space.count(at);
  if (count === 0) return PartitionSubset.EMPTY;
  const last = space.windowAt(count - 1);
  if (!last) return PartitionSubset.range(0, count);
  let first = count - 1;
  while (first > 0 && space.windowAt(first - 1)?.start.getTime() === last.start.getTime()) first--;
  return PartitionSubset.range(first, count);
}

export function latestDueStart(space: PartitionSpace, at: Date): number {
  return latestDue(space, at).first() ?? 0;
}

export function latestWindow(space: PartitionSpace | null, existing: PartitionSubset, count: number, now: Date): PartitionSubset {
  if (!space) return existing;
  let out = PartitionSubset.EMPTY;
  let at = now;
  for (let i = 0; i < count; i++) {
    const due = latestDue(space, at);
    const first = due.first();
    if (first === undefined) break;
    out = out.union(due);
    const w = space.windowAt(first);
    if (!w || first === 0) break;
    // Step back to the moment just before the window before it closed.
    at = new Date(space.windowAt(first - 1)!.end.getTime());
    if (at >= now) break;
  }
  return out.intersection(existing);
}
