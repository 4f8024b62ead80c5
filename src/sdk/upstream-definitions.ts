import type { AssetDefinition } from "./asset.js";

// Which upstream definitions an asset was declared with, when its deps named them as objects (`deps: { orders }`,
// `dep(orders, …)`) rather than keys. Never serialised: the definitions snapshot holds keys only. An in-memory
// materialisation (tributary/testing) uses it to find the partitions of an upstream the test did not list.

const depTargets = new WeakMap<object, AssetDefinition>();
const upstreamsOf = new WeakMap<object, readonly AssetDefinition[]>();

/** Remembers the definition a `dep(…)` was made from. */
export function rememberDepTarget(dep: object, upstream: AssetDefinition): void {
  depTargets.set(dep, upstream);
}

/** Remembers the upstream definitions among an asset's `deps` values (definitions, or deps made from one). */
export function rememberUpstreams(definition: AssetDefinition, deps: Readonly<Record<string, unknown>> | undefined): void {
  if (!deps) return;
  const found: AssetDefinition[] = [];
  for (const value of Object.values(deps)) {
    if (typeof value !== "object" || value === null) continue;
    const target = depTargets.get(value) ?? ("spec" in value && "key" in value ? (value as AssetDefinition) : undefined);
    if (target) found.push(target);
  }
  if (found.length > 0) upstreamsOf.set(definition, found);
}

/**
 * The upstream definitions `definition` was declared with, in the order of its deps; an upstream named by its key
 * only (`dep("shop/orders")`) is not among them.
 * @example
 * import { asset } from "./asset.js";
 * // given orders: AssetDefinition<{ rows: number }>
 * const summary = asset({ key: "shop/summary", deps: { orders } }, (_ctx, { orders }) => orders?.rows ?? 0);
 * declaredUpstreams(summary); // [orders]
 */
export function declaredUpstreams(definition: AssetDefinition): readonly AssetDefinition[] {
  return upstreamsOf.get(definition) ?? [];
}
