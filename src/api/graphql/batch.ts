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
