import type { SnapshotAsset } from "../graph/index.js";
import { InputError, PartitionError } from "../errors/index.js";
import { loadPartitionSpace } from "../partitions/index.js";
import type { PartitionStatusRecord } from "../storage/index.js";

export interface PartitionRow {
  key: string;
  start: Date | undefined;
  end: Date | undefined;
}

/** A listed partition whose status is read on first use, for the whole page at once. */
export interface PartitionStatusRow extends PartitionRow {
  state(): Promise<PartitionStatusRecord | undefined>;
}

export interface PartitionListing {
  totalCount: number;
  nodes: PartitionRow[];
  endCursor: string | null;
  hasNextPage: boolean;
}

/**
 * One page of an asset's existing partitions (optionally within [from, to]).
 * Works on index ranges, so the cost is the page size, not the partition count.
 */
export async function listPartitions(
  asset: SnapshotAsset,
  options: {
    from?: string | undefined;
    to?: string | undefined;
    first: number;
    after?: string | undefined;
    now: Date;
    dynamicKeys: (name: string) => Promise<readonly string[]>;
  },
): Promise<PartitionListing> {
  if (!asset.partitions) {
    const nodes = options.after ? [] : [{ key: "", start: undefined, end: undefined }];
    return { totalCount: 1, nodes: nodes.slice(0, options.first), endCursor: null, hasNextPage: false };
  }
  const space = await loadPartitionSpace(asset.partitions, options.dynamicKeys);
  const existing = space.all(options.now);
  let subset = existing;
  if (options.from !== undefined || options.to !== undefined) {
    const count = space.count(options.now);
    if (count === 0) return { totalCount: 0, nodes: [], endCursor: null, hasNextPage: false };
    const from = options.from ?? space.keyAt(0);
    const to = options.to ?? space.keyAt(count - 1);
    try {
      subset = space.range(from, to).intersection(existing);
    } catch (err) {
      if (!(err instanceof PartitionError)) throw err;
      throw new PartitionError(`asset "${asset.key}": ${err.message}`, {
        code: err.code,
        cause: err,
        location: { ...err.location, assetKey: asset.key },
      });
    }
  }
  let startAfter = -1;
  if (options.after !== undefined) {
    startAfter = Number(options.after);
    if (!Number.isInteger(startAfter) || startAfter < -1) {
      throw new InputError(`after: "${options.after}" is not a cursor returned by this field`);
    }
  }
  const nodes: PartitionRow[] = [];
  let lastIndex = -1;
  let hasNextPage = false;
  for (const index of subset.indicesFrom(startAfter + 1)) {
    if (nodes.length === options.first) {
      hasNextPage = true;
      break;
    }
    const key = space.keyAt(index);
    const window = space.window(key);
    nodes.push({ key, start: window?.start, end: window?.end });
    lastIndex = index;
  }
  return {
    totalCount: subset.count(),
    nodes,
    endCursor: lastIndex >= 0 ? String(lastIndex) : null,
    hasNextPage,
  };
}

/**
 * Gives each row of a page its status, loaded once for the whole page on the
 * first call (one query per page, none when no status is asked for).
 */
export function withStates(
  nodes: readonly PartitionRow[],
  load: (keys: string[]) => Promise<ReadonlyMap<string, PartitionStatusRecord>>,
): PartitionStatusRow[] {
  let page: Promise<ReadonlyMap<string, PartitionStatusRecord>> | undefined;
  const states = () => (page ??= load(nodes.map((n) => n.key)));
  return nodes.map((n) => ({ ...n, state: async () => (await states()).get(n.key) }));
}
