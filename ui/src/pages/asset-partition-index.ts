// Partition index ↔ key for the asset page, computed in the browser with the same pure partitions module the
// server uses (src/partitions, loaded lazily: only partitioned asset pages pay for it). The status ranges the API
// returns cover the existing partitions [0, total) in the definition's order, so the n-th partition under the
// cursor is `keyAt(n)` here, exactly as on the server. Definitions with dynamic keys need those keys: they are
// read once from the asset's own partition listing, which is in the same order.
import { gql } from "../api";

type PartitionsModule = typeof import("../../../src/partitions/index.js");
type Spec = import("../../../src/partitions/index.js").PartitionsSpec;

/** One dimension of a multi-partitioned asset, in linearisation order (the time dimension leads). */
export interface IndexAxis {
  readonly name: string;
  /** Keys of the dimension among the existing partitions. */
  readonly size: number;
  keyAt(index: number): string;
  /** The digit of a key of this dimension; undefined when it is not one. */
  indexOf(key: string): number | undefined;
}

export interface PartitionIndex {
  readonly total: number;
  keyAt(index: number): string;
  /** The index of an existing partition's key; undefined when the key is not one of them. */
  indexOf(key: string): number | undefined;
  /** For a multi-partitioned asset, its dimensions in linearisation order; index = Σ digitₖ · strideₖ. */
  readonly axes: readonly IndexAxis[] | undefined;
}

const KEYS_PAGE = 10_000;
const KEYS_QUERY = `query($key: String!, $after: String) { asset(key: $key) {
  partitions(first: ${KEYS_PAGE}, after: $after) { endCursor hasNextPage nodes { key } } } }`;

interface KeysPage {
  asset: { partitions: { endCursor: string | null; hasNextPage: boolean; nodes: { key: string }[] } } | null;
}

/** Every existing key of the asset, in index order (only for definitions with dynamic keys). */
async function listKeys(assetKey: string, signal: AbortSignal): Promise<string[]> {
  const keys: string[] = [];
  let after: string | null = null;
  for (;;) {
    const page: KeysPage = await gql<KeysPage>(KEYS_QUERY, { key: assetKey, after }, signal);
    if (!page.asset) throw new Error(`asset "${assetKey}" is no longer defined`);
    for (const n of page.asset.partitions.nodes) keys.push(n.key);
    if (!page.asset.partitions.hasNextPage) return keys;
    after = page.asset.partitions.endCursor;
  }
}

/** The dynamic set's keys in insertion order, as they appear in the existing multi keys. */
function dynamicKeysFrom(spec: Spec, keys: readonly string[], separator: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  if (spec.kind === "dynamic") out.set(spec.name, [...keys]);
  if (spec.kind !== "multi") return out;
  spec.dimensions.forEach((d, position) => {
    if (d.partitions.kind !== "dynamic") return;
    const seen = new Set<string>();
    for (const key of keys) seen.add(key.split(separator)[position]!);
    out.set(d.partitions.name, [...seen]);
  });
  return out;
}

/**
 * The index of an asset's existing partitions. `total` is the count the API reported with the ranges (the
 * server's clock decides which time partitions exist; this never second-guesses it).
 */
export async function loadPartitionIndex(assetKey: string, spec: Spec, total: number, signal: AbortSignal): Promise<PartitionIndex> {
  const partitions: PartitionsModule = await import("../../../src/partitions/index.js");
  const separator = partitions.DIMENSION_SEPARATOR;
  const dynamic =
    partitions.dynamicNames(spec).length === 0
      ? new Map<string, string[]>()
      : dynamicKeysFrom(spec, await listKeys(assetKey, signal), separator);
  const space = partitions.partitionSpace(spec, { dynamicKeys: (name) => dynamic.get(name) ?? [] });
  return {
    total,
    keyAt: (index) => space.keyAt(index),
    indexOf: (key) => {
      if (!space.has(key)) return undefined;
      const i = space.indexOf(key);
      return i < total ? i : undefined;
    },
    axes: spec.kind === "multi" ? multiAxes(spec, (i) => space.keyAt(i), total, dynamic, separator) : undefined,
  };
}

/** The dimensions as the space orders them (time first, then as declared), each with its size among existing partitions. */
function multiAxes(
  spec: Extract<Spec, { kind: "multi" }>,
  keyAt: (index: number) => string,
  total: number,
  dynamic: ReadonlyMap<string, readonly string[]>,
  separator: string,
): IndexAxis[] {
  const declared = spec.dimensions.map((d, position) => ({ name: d.name, spec: d.partitions, position }));
  const time = declared.find((d) => d.spec.kind === "time");
  const order = time ? [time, ...declared.filter((d) => d !== time)] : declared;
  // Only the time dimension grows with the clock: its existing size is what the other dimensions leave of the total.
  const sizes = order.map((d) =>
    d.spec.kind === "static" ? d.spec.keys.length : d.spec.kind === "dynamic" ? (dynamic.get(d.spec.name)?.length ?? 0) : -1,
  );
  const rest = sizes.reduce((p, s) => (s < 0 ? p : p * s), 1);
  const resolved = sizes.map((s) => (s >= 0 ? s : rest === 0 ? 0 : Math.round(total / rest)));
  return order.map((d, k) => {
    const stride = resolved.slice(k + 1).reduce((p, s) => p * s, 1);
    const size = resolved[k]!;
    // Digit j's key: that dimension's part of the key of the partition with digit j and zeros elsewhere.
    const axisKey = (j: number) => keyAt(j * stride).split(separator)[d.position]!;
    let digits: Map<string, number> | undefined;
    return {
      name: d.name,
      size,
      keyAt: axisKey,
      indexOf: (key: string) => (digits ??= new Map(Array.from({ length: size }, (_, j) => [axisKey(j), j]))).get(key),
    };
  });
}
