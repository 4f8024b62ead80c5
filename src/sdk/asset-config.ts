// The options an asset is declared with (`asset({ … })`), each with an example an editor shows on hover.
import type { PartitionsSpec } from "../partitions/index.js";
import type { DepsRecord, InputsOf } from "./asset.js";
import type { AutomationSpec } from "./automation.js";
import type { AssetCallbacks } from "./callbacks.js";
import type { Duration } from "./duration.js";
import type { EraseHook } from "./erase.js";
import type { MapLabel } from "./fan-out.js";
import type { JsonValue } from "./json.js";
import type { ExecutorKind, TriggerRule } from "./spec.js";

/** How a failed try is retried: `asset({ …, retries: { max: 3, delay: "30s", backoff: "exponential" } })`. */
export interface RetryConfig {
  /**
   * Retries after the first try: `max: 3` means up to four tries.
   * @example asset({ key: "sales/orders", retries: { max: 3 } }, async () => ({ rows: 42 }))
   */
  max: number;
  /**
   * Wait before the first retry (default 30 s); with a backoff, the base the later waits grow from.
   * @example asset({ key: "sales/orders", retries: { max: 5, delay: "1m" } }, async () => ({ rows: 42 }))
   */
  delay?: Duration;
  /**
   * How the wait grows from one retry to the next: the same `delay` each time (`fixed`, the default), `delay` times
   * the retry's number (`linear`: 1×, 2×, 3×), or 1×, 3×, 7×, … `delay` (`exponential`).
   * @example asset({ key: "sales/orders", retries: { max: 4, delay: "10s", backoff: "exponential" } }, async () => ({ rows: 42 }))
   */
  backoff?: "fixed" | "linear" | "exponential";
  /**
   * The longest wait a growing backoff may reach (default 24 h).
   * @example asset({ key: "sales/orders", retries: { max: 10, delay: "10s", backoff: "exponential", maxDelay: "15m" } }, async () => 1)
   */
  maxDelay?: Duration;
  /**
   * Shortens each wait by a random factor between 0.5 and 1, so that steps failing together do not retry together
   * (default false).
   * @example asset({ key: "sales/orders", retries: { max: 3, delay: "30s", jitter: true } }, async () => ({ rows: 42 }))
   */
  jitter?: boolean;
}

/** What every asset declares, with or without dependencies: see asset(). */
export interface AssetConfigBase extends AssetCallbacks {
  /**
   * `sales/orders`: segments of letters, digits, `_` and `-`, joined by `/`.
   * @example asset({ key: "sales/orders" }, async () => ({ rows: 42 }))
   */
  key: string;
  /**
   * How the asset is sliced: each partition is materialised on its own (default: not partitioned).
   * @example asset({ key: "sales/orders", partitions: daily({ start: "2025-01-01" }) }, async (ctx) => ctx.partition.key)
   */
  partitions?: PartitionsSpec;
  /**
   * When Tributary materialises partitions by itself (default: only when asked, by a run or a backfill).
   * @example asset({ key: "sales/orders", partitions: daily({ start: "2025-01-01" }), automation: onCron("0 1 * * *") }, async () => 1)
   */
  automation?: AutomationSpec;
  /**
   * Defaults to the key's first segment (`sales` for `sales/orders`), else "default".
   * @example asset({ key: "orders", group: "sales" }, async () => ({ rows: 42 }))
   */
  group?: string;
  /**
   * Who gets the alerts: `team:sales`, an e-mail address.
   * @example asset({ key: "sales/orders", owner: "team:sales" }, async () => ({ rows: 42 }))
   */
  owner?: string;
  /**
   * What the asset holds, for the people reading it in the UI and `tributary explain`.
   * @example asset({ key: "sales/orders", description: "Orders placed during the day" }, async () => ({ rows: 42 }))
   */
  description?: string;
  /**
   * Labels to find and group assets by.
   * @example asset({ key: "sales/orders", tags: { tier: "gold", domain: "sales" } }, async () => ({ rows: 42 }))
   */
  tags?: Record<string, string>;
  /**
   * Free JSON; `metadata.pii` lists columns holding personal data.
   * @example asset({ key: "sales/orders", metadata: { pii: ["customer"], source: "shop db" } }, async () => ({ rows: 42 }))
   */
  metadata?: Record<string, JsonValue>;
  /**
   * A named number of slots its steps compete for with every other step naming the pool: a limit on what runs at
   * once against a shared resource.
   * @example asset({ key: "sales/orders", pool: "warehouse" }, async () => ({ rows: 42 }))
   */
  pool?: string;
  /**
   * How many of the pool's slots one step takes (default 1).
   * @example asset({ key: "sales/rebuild", pool: "warehouse", poolSlots: 4 }, async () => ({ rows: 42 }))
   */
  poolSlots?: number;
  /**
   * Higher runs first; default 0.
   * @example asset({ key: "sales/orders", priority: 10 }, async () => ({ rows: 42 }))
   */
  priority?: number;
  /**
   * `3` is short for `{ max: 3 }`; see RetryConfig. Default: no retry.
   * @example asset({ key: "sales/orders", retries: { max: 3, delay: "30s", backoff: "exponential" } }, async () => ({ rows: 42 }))
   */
  retries?: number | RetryConfig;
  /**
   * Time limit of one try: past it `ctx.signal` aborts, then the try is killed and fails (no limit by default).
   * @example asset({ key: "sales/orders", timeout: "10m" }, async () => ({ rows: 42 }))
   */
  timeout?: Duration;
  /**
   * At most this many of its steps at once, across runs (no limit by default).
   * @example asset({ key: "sales/orders", partitions: daily({ start: "2025-01-01" }), maxConcurrency: 2 }, async () => 1)
   */
  maxConcurrency?: number;
  /**
   * At most this many runs with the asset active at once; later ones wait their turn (no limit by default).
   * @example asset({ key: "sales/orders", partitions: daily({ start: "2025-01-01" }), maxActiveRuns: 1 }, async () => 1)
   */
  maxActiveRuns?: number;
  /**
   * Automation requests every partition that fell due before it first evaluated the asset (or during a pause),
   * not only the latest; default false.
   * @example asset({ key: "sales/orders", partitions: daily({ start: "2025-01-01" }), automation: eager(), catchup: true }, async () => 1)
   */
  catchup?: boolean;
  /**
   * Which outcomes of its upstream steps in the same run let its step run (default `all_success`).
   * @example asset({ key: "sales/cleanup", triggerRule: "all_done" }, async () => ({ cleaned: true }))
   */
  triggerRule?: TriggerRule;
  /**
   * Where its steps run: `local` (the default, the reconciler's or dev's worker processes), `bullmq` (a worker
   * fleet through Redis), `transactional` (exactly once, in a database transaction: `ctx.tx`) or `kubernetes`.
   * @example asset({ key: "sales/orders", executor: "bullmq", queue: "gpu" }, async () => ({ rows: 42 }))
   */
  executor?: ExecutorKind;
  /**
   * The queue its steps are put in for the workers (default `default`): `tributary worker --queues` picks which.
   * @example asset({ key: "ml/embeddings", executor: "bullmq", queue: "gpu" }, async () => ({ vectors: 42 }))
   */
  queue?: string;
  /**
   * Changing it marks materialised partitions stale.
   * @example asset({ key: "sales/orders", codeVersion: "2025-03-rounding-fix" }, async () => ({ rows: 42 }))
   */
  codeVersion?: string;
  /**
   * Alert when a partition is not materialised this long after its window closed.
   * @example asset({ key: "sales/orders", partitions: daily({ start: "2025-01-01" }), deadline: "6h" }, async () => 1)
   */
  deadline?: Duration;
  /**
   * Time limit of each of onSuccess, onFailure and onRetry (default 30 s).
   * @example asset({ key: "sales/orders", onSuccess: async () => undefined, callbackTimeout: "5s" }, async () => 1)
   */
  callbackTimeout?: Duration;
}

/** The config of an asset: see asset(). `deps` types the values its function receives. */
export interface AssetConfig<D extends DepsRecord | undefined = DepsRecord | undefined> extends AssetConfigBase {
  /**
   * The assets it reads, by the name its function receives each value under: an asset (the default partition
   * mapping), or dep(asset, mapping).
   * @example
   * // given orders: AssetDefinition<{ rows: number }>
   * asset({ key: "sales/summary", partitions: daily({ start: "2025-01-01" }),
   *   deps: { orders, week: dep(orders, timeWindow({ startOffset: -6 })) } },
   *   async (_ctx, { orders, week }) => (orders?.rows ?? 0) / week.length);
   */
  deps?: D;
  /**
   * Fans the asset out at run time: called with the upstream values once per partition, it answers the items;
   * the asset function then runs once per item (its own step, `ctx.map`), and downstream assets receive the
   * outputs as an array in item order. An empty list runs no item and gives downstream `[]`.
   * @example asset({ key: "sales/regions", map: () => ["eu", "us"] }, async (ctx) => ({ region: ctx.map.item }))
   */
  map?: ((inputs: InputsOf<D>) => readonly unknown[] | Promise<readonly unknown[]>) | undefined;
  /**
   * A readable label per item, shown beside its map index (at most 200 characters).
   * @example asset({ key: "sales/files", map: () => [{ path: "/in/a.csv" }], mapLabel: (f) => f.path }, async (ctx) => ctx.map.item.path)
   */
  mapLabel?: (item: never, index: number) => string;
  /**
   * The most items one fan-out (`map` or `ctx.expand`) may have; default 10 000, at most 100 000.
   * @example asset({ key: "sales/lines", map: () => [1, 2, 3], maxMapItems: 50_000 }, async (ctx) => ctx.map.item * 2)
   */
  maxMapItems?: number;
  /**
   * Removes what the asset wrote outside Tributary for partitions an erasure request reaches (see EraseHook).
   * @example
   * // given dropRows: (keys: readonly string[]) => Promise<number>
   * asset({ key: "crm/profiles", partitions: dynamicPartitions("customers"),
   *   erase: async (ctx, { partitions }) => ctx.log(`deleted ${await dropRows(partitions)} rows`) },
   *   async (ctx) => ({ customer: ctx.partition.key }));
   */
  erase?: EraseHook;
  /**
   * Time limit of one call of `erase` (default 10 min).
   * @example asset({ key: "crm/profiles", erase: async () => undefined, eraseTimeout: "30m" }, async () => ({ rows: 42 }))
   */
  eraseTimeout?: Duration;
  /**
   * How long this asset's stored outputs, its tries' logs and its run history are kept
   * (`{ outputs: "30d", logs: "14d", history: "90d" }`, each 1h to 3650d): older outputs and logs are deleted by the
   * reconcilers — outputs except those a step may still read — and older history (runs, steps, tries, events, lineage
   * rows, check results, logs) is archived to the output store, then deleted — except what a partition's latest state
   * needs. Overrides TRIBUTARY_OUTPUT_RETENTION, TRIBUTARY_LOG_RETENTION and TRIBUTARY_HISTORY_RETENTION for this asset;
   * a run is archived once every asset it ran is past its retention.
   * @example asset({ key: "sales/orders", retention: { outputs: "30d", logs: "14d", history: "90d" } }, async () => ({ rows: 42 }))
   */
  retention?: { outputs?: Duration; logs?: Duration; history?: Duration };
}

/** The config of an asset with `map`: its items type the function's `ctx.map.item`. */
export interface MappedAssetConfig<D extends DepsRecord | undefined, I> extends Omit<AssetConfig<D>, "map" | "mapLabel"> {
  /**
   * The items of one partition's fan-out, from the upstream values: the function runs once per item (`ctx.map.item`).
   * @example
   * // given files: AssetDefinition<{ paths: string[] }>
   * asset({ key: "sales/parsed", deps: { files }, map: ({ files }) => files?.paths ?? [] }, async (ctx) => ctx.map.item.length)
   */
  map: (inputs: InputsOf<D>) => readonly I[] | Promise<readonly I[]>;
  /**
   * A readable label per item, shown beside its map index (at most 200 characters).
   * @example asset({ key: "sales/files", map: () => [{ path: "/in/a.csv" }], mapLabel: (f) => f.path }, async (ctx) => ctx.map.item.path)
   */
  mapLabel?: MapLabel<I>;
}
