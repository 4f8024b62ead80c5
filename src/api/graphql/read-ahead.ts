// Fields of a list of assets read with the list (`assets { paused partitionStatus { counts } latestMaterialization
// { … } }`): the list's resolver reads, for all of its assets at once, each such field the query asks of them, and
// each asset's field then has its value without waiting. GraphQL otherwise builds a promise per asset and field and
// keeps them all alive until the level's batch is read: over 10 000 assets, that was most of a request's time.
import { Kind, type FieldNode, type GraphQLResolveInfo, type SelectionSetNode } from "graphql";
import type { SnapshotAsset } from "../../graph/index.js";
import { perContext } from "./batch.js";

/** Per request: for each kind of value read ahead, its value by asset. */
const kept = perContext((_ctx: object) => new Map<string, ReadonlyMap<SnapshotAsset, unknown>>());

/** The value of `kind` read ahead for this asset in this request; undefined when none was. */
export function readAheadOf<T>(ctx: object, kind: string, asset: SnapshotAsset): { readonly value: T } | undefined {
  const values = kept(ctx).get(kind);
  return values?.has(asset) ? { value: values.get(asset) as T } : undefined;
}

/**
 * Reads `kind` for these assets and keeps it for the request. When the read fails nothing is kept: each asset's field
 * then reads (and reports) for itself, as it would have without reading ahead.
 */
export async function readAhead<T>(
  ctx: object,
  kind: string,
  assets: readonly SnapshotAsset[],
  read: () => Promise<ReadonlyMap<SnapshotAsset, T>>,
): Promise<void> {
  if (assets.length === 0) return;
  let values: ReadonlyMap<SnapshotAsset, T>;
  try {
    values = await read();
  } catch {
    return;
  }
  kept(ctx).set(kind, values);
}

/** The fields named `name` that the list's field (info) selects on its items, through inline fragments and fragment spreads. */
export function selectedOnItems(info: GraphQLResolveInfo, name: string): FieldNode[] {
  return info.fieldNodes.flatMap((n) => fieldsNamed(n.selectionSet, name, info.fragments));
}

/** The fields named `name` of a selection, through its inline fragments and fragment spreads. */
export function fieldsNamed(
  selection: SelectionSetNode | undefined,
  name: string,
  fragments: GraphQLResolveInfo["fragments"],
  seen = new Set<string>(),
): FieldNode[] {
  const out: FieldNode[] = [];
  for (const s of selection?.selections ?? []) {
    if (s.kind === Kind.FIELD) {
      if (s.name.value === name) out.push(s);
    } else if (s.kind === Kind.INLINE_FRAGMENT) {
      out.push(...fieldsNamed(s.selectionSet, name, fragments, seen));
    } else if (!seen.has(s.name.value)) {
      seen.add(s.name.value);
      out.push(...fieldsNamed(fragments[s.name.value]?.selectionSet, name, fragments, seen));
    }
  }
  return out;
}
