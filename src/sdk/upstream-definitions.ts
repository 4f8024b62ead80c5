import type { AssetDefinition } from "./asset.js";
import type { CheckDefinition } from "./check.js";

// Which upstream definitions an asset was declared with, when its deps named them as objects (`deps: { orders }`,
// `dep(orders, …)`) rather than keys, and which checks were declared on it as an object (`check(orders, …)`). Never
// serialised: the definitions snapshot holds keys only. An in-memory materialisation (tributary/testing) uses them
// to find the partitions of an upstream the test did not list, and the checks of the assets it runs.

const depTargets = new WeakMap<object, AssetDefinition>();
const upstreamsOf = new WeakMap<object, readonly AssetDefinition[]>();
const checksOf = new WeakMap<object, CheckDefinition[]>();

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

/** Remembers a check declared on an asset definition (not on a key). */
export function rememberCheck(asset: AssetDefinition, check: CheckDefinition): void {
  const known = checksOf.get(asset);
  if (known) known.push(check);
  else checksOf.set(asset, [check]);
}

/**
 * The checks declared on `definition` itself (`check(orders, …)`), in the order they were made; a check declared
 * on the asset's key (`check("shop/orders", …)`) is not among them.
 * @example
 * import { check } from "./check.js";
 * // given orders: AssetDefinition<{ rows: number }>
 * const notEmpty = check(orders, { name: "not_empty" }, (_ctx, value) => ({ passed: (value?.rows ?? 0) > 0 }));
 * declaredChecks(orders); // [notEmpty]
 */
export function declaredChecks(definition: AssetDefinition): readonly CheckDefinition[] {
  return checksOf.get(definition) ?? [];
}
