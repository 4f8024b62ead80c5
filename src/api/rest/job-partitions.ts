import { loadPartitionContext, partitionSpace, type PartitionSpace, type PartitionsSpec, type TimeWindow } from "../../partitions/index.js";
import type { InstantRange, JobRunFilter, JobRunOrder } from "../../storage/index.js";
import type { Catalog } from "../catalog.js";
import type { AssetJob } from "./asset-jobs.js";
import { RestError } from "./rest-error.js";

/** A job's partitions as the REST API sees them: keys ↔ logical dates and data intervals. */
export interface JobPartitions {
  /** The partition's time window; undefined for an unpartitioned job, a key without time, or a key no longer in the definition. */
  window(key: string): TimeWindow | undefined;
  /** The existing partition whose window holds `instant`; RestError 400 naming `field` when there is none. */
  keyAt(instant: Date, now: Date, field: string): string;
  /** The partition space; null for an unpartitioned job. */
  readonly space: PartitionSpace | null;
  /**
   * The run filter for DAG runs whose logical date lies in `range`, as
   * dagRunView derives it: the window start of the run's first partition key
   * (time partitions) or the run's creation time (no time partitions).
   * RestError 400 naming `field` for multi-dimensional partitions.
   */
  logicalDateFilter(range: InstantRange, now: Date, field: string): Pick<JobRunFilter, "firstKeyRange" | "firstKeyIn" | "createdAt">;
  /** The run order by logical date, as dagRunView derives it (newest first when `descending`). */
  logicalDateOrder(now: Date, descending: boolean): JobRunOrder;
}

/** The most windows an execution_date range may name when keys must be listed (see logicalDateFilter). */
const MAX_LISTED_WINDOWS = 10_000;
/** The most keys ranked to order runs by logical date when their text order is not time order (beyond: creation order). */
const MAX_RANKED_WINDOWS = 20_000;
/** Key formats whose text order is time order (largest unit first, fixed width): key ranges then compare as text. */
const CHRONOLOGICAL_FORMAT = /^yyyy([^A-Za-z]?MM([^A-Za-z]?dd([^A-Za-z]?HH([^A-Za-z]?mm([^A-Za-z]?ss)?)?)?)?)?$/;

/** The job's partition space (dynamic keys fetched through the catalog). */
export async function jobPartitions(job: AssetJob, catalog: Pick<Catalog, "dynamicKeys">): Promise<JobPartitions> {
  const spec = job.partitions;
  const space = spec ? partitionSpace(spec, await loadPartitionContext([spec], (name) => catalog.dynamicKeys(name))) : null;
  return {
    space,
    window: (key) => (space && key !== "" && space.has(key) ? space.window(key) : undefined),
    keyAt: (instant, now, field) => {
      if (!space || space.spec.kind !== "time") {
        throw RestError.badRequest(
          `${field}: DAG ${JSON.stringify(job.dagId)} does not have plain time partitions (${space ? space.describe() : "unpartitioned"}), so a date cannot select a partition${space ? "; name one with conf.partition_key" : ""}`,
        );
      }
      const index = windowIndexAt(space, instant, space.count(now));
      if (index === undefined) {
        throw RestError.badRequest(
          `${field}: ${instant.toISOString()} lies in no existing partition of DAG ${JSON.stringify(job.dagId)} (${space.describe()}; a partition exists once its window has closed)`,
        );
      }
      return space.keyAt(index);
    },
    logicalDateFilter: (range, now, field) => {
      if (!space || !hasWindows(space.spec)) return { createdAt: range };
      if (space.spec.kind !== "time") {
        throw RestError.badRequest(
          `${field}: DAG ${JSON.stringify(job.dagId)} has multi-dimensional partitions (${space.describe()}); filtering its runs by logical date is not supported`,
        );
      }
      const count = space.count(now);
      // Windows are in time order: the first whose start is >= gte, the last whose start is <= lte.
      const lo = range.gte === undefined ? 0 : firstIndexWhere(count, (i) => space.windowAt(i)!.start.getTime() >= range.gte!.getTime());
      const hi =
        range.lte === undefined ? count - 1 : firstIndexWhere(count, (i) => space.windowAt(i)!.start.getTime() > range.lte!.getTime()) - 1;
      if (lo > hi) return { firstKeyIn: [] };
      if (CHRONOLOGICAL_FORMAT.test(space.spec.format)) {
        return {
          firstKeyRange: {
            gte: range.gte === undefined ? undefined : space.keyAt(lo),
            lte: range.lte === undefined ? undefined : space.keyAt(hi),
          },
        };
      }
      // Keys whose text order is not time order (e.g. dd.MM.yyyy) are listed one by one.
      if (hi - lo + 1 > MAX_LISTED_WINDOWS) {
        throw RestError.badRequest(
          `${field}: the range spans ${hi - lo + 1} partitions of DAG ${JSON.stringify(job.dagId)} (at most ${MAX_LISTED_WINDOWS} with its key format ${space.spec.format}); narrow execution_date_gte/lte`,
        );
      }
      return { firstKeyIn: Array.from({ length: hi - lo + 1 }, (_, i) => space.keyAt(lo + i)) };
    },
    logicalDateOrder: (now, descending) => {
      // Without time windows the logical date is the creation time.
      if (!space || space.spec.kind !== "time") return { by: "createdAt", descending };
      if (CHRONOLOGICAL_FORMAT.test(space.spec.format)) return { by: "firstKey", descending };
      // Other key formats are ranked by their windows: every existing key, in time order.
      const count = space.count(now);
      if (count <= MAX_RANKED_WINDOWS) return { by: "keyRank", keys: Array.from({ length: count }, (_, i) => space.keyAt(i)), descending };
      return { by: "createdAt", descending };
    },
  };
}

/** Whether a definition's keys have time windows: time partitions, or multi ones with a time dimension. */
function hasWindows(spec: PartitionsSpec): boolean {
  return spec.kind === "time" || (spec.kind === "multi" && spec.dimensions.some((d) => d.partitions.kind === "time"));
}

/** The first index in [0, count) where `pred` holds (pred monotonic: false… then true…); count when none. */
function firstIndexWhere(count: number, pred: (index: number) => boolean): number {
  let lo = 0;
  let hi = count;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (pred(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** Index of the window among the first `count` that holds `instant` (binary search on window starts). */
function windowIndexAt(space: PartitionSpace, instant: Date, count: number): number | undefined {
  let lo = 0;
  let hi = count - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (space.windowAt(mid)!.start.getTime() <= instant.getTime()) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  if (found < 0) return undefined;
  return instant.getTime() < space.windowAt(found)!.end.getTime() ? found : undefined;
}
