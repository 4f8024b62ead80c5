import type { CatalogView } from "../catalog.js";
import type { ApiServices } from "../services.js";

/**
 * Collects the keys asked for while GraphQL resolves one level of a query
 * (`assets { paused }` asks once per asset, in the same tick) and loads them
 * with one call. Nothing is cached beyond the batch: the next request reads
 * fresh data.
 */
export function batched<K, V>(load: (keys: K[]) => Promise<ReadonlyMap<K, V>>): (key: K) => Promise<V | undefined> {
  let pending: { keys: Set<K>; result: Promise<ReadonlyMap<K, V>> } | undefined;
  return (key) => {
    if (!pending) {
      const keys = new Set<K>();
      // Resolvers of sibling fields run before any awaited promise settles: wait one macrotask, then load them all.
      const result = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        pending = undefined;
        return load([...keys]);
      });
      pending = { keys, result };
    }
    pending.keys.add(key);
    const { result } = pending;
    return result.then((m) => m.get(key));
  };
}

/** One batcher per context object (a server has one context; tests may build several). */
export function perContext<C extends object, F>(make: (ctx: C) => F): (ctx: C) => F {
  const cache = new WeakMap<C, F>();
  return (ctx) => {
    let f = cache.get(ctx);
    if (!f) {
      f = make(ctx);
      cache.set(ctx, f);
    }
    return f;
  };
}

/**
 * The definitions a request reads: the catalog's view when the request first asks, the same one for all of its
 * fields, and at hand without a promise once read, so that a field of each of 10 000 assets (`upstream`) resolves
 * in the same tick instead of awaiting the catalog 10 000 times.
 */
export const requestCatalog = perContext((ctx: Pick<ApiServices, "assets">) => {
  let view: CatalogView | undefined;
  const loading = ctx.assets.catalog.current().then((v) => (view = v));
  return (): CatalogView | Promise<CatalogView> => view ?? loading;
});

/** `f` of the request's definitions: at once when they have been read, else once they are. */
export function withCatalog<T>(ctx: Pick<ApiServices, "assets">, f: (view: CatalogView) => T): T | Promise<T> {
  const view = requestCatalog(ctx)();
  return view instanceof Promise ? view.then(f) : f(view);
}
