import type { TimeWindow } from "../partitions/index.js";
import type { Expansion, MapItem, MapLabel } from "./fan-out.js";
import type { TriggerSpec } from "./triggers.js";
import type { WaitForOptions, WaitOptions } from "./wait.js";

export interface PartitionContext {
  /** The partition key, `""` for an unpartitioned asset. */
  readonly key: string;
  /** The data interval of a time partition (or of the time dimension of a multi-partition). */
  readonly window: TimeWindow | undefined;
  /** Per-dimension keys of a multi-partition. */
  readonly dimensions: Readonly<Record<string, string>> | undefined;
}

export interface StepLogger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export interface Secrets {
  /** Resolves a secret at run time; throws naming the secret when it is missing. */
  get(name: string): Promise<string>;
}

/** What an asset function receives besides its upstream values. */
export interface AssetContext {
  readonly assetKey: string;
  readonly partition: PartitionContext;
  readonly run: { readonly id: string };
  readonly tryNumber: number;
  readonly log: StepLogger;
  /** Aborts on timeout or cancellation: pass it to fetch, database drivers, streams. */
  readonly signal: AbortSignal;
  readonly secrets: Secrets;
  /**
   * Under `executor: "transactional"`: a Kysely `Transaction` on the metadata database, in which the step's
   * state change and output commit with the function's own writes (all or nothing, once). `undefined` under
   * every other executor. Typed loosely because definitions files must load without a database driver: cast it
   * to your schema for typed queries (`ctx.tx as Transaction<MyDb>`) or pass it to raw SQL (`sql\`…\`.execute(ctx.tx)`).
   * It stops working when the function returns. See docs/transactional.md.
   * @example
   * // given ctx: AssetContext, total: number
   * await ctx.tx!.insertInto("orders_daily").values({ day: ctx.partition.key, total }).execute();
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a Kysely Transaction; the SDK must not import kysely
  readonly tx: any;
  /** Ends the step as `skipped` with a reason; downstream follows its trigger rule. */
  skip(reason: string): never;
  /**
   * Frees the worker slot until the trigger fires (checked by the triggerer), then re-enters the function: this call
   * then resolves at once with the trigger's payload. Code before it runs again, so keep it cheap and idempotent.
   * @example
   * // given ctx: AssetContext
   * const file = await ctx.defer(fileExists("/landing/{partition}.csv"), { timeout: "6h" });
   */
  defer<T = unknown>(trigger: TriggerSpec, options?: WaitOptions): Promise<T>;
  /**
   * A sensor: waits for the trigger in the chosen mode (`deferrable` as ctx.defer, `reschedule`: one check per try with
   * the slot freed in between, `poke`: checks every interval holding the slot); resolves with the payload.
   */
  waitFor<T = unknown>(trigger: TriggerSpec, options?: WaitForOptions): Promise<T>;
  addDynamicPartitions(name: string, keys: readonly string[]): Promise<void>;
  /** In a mapped step: its item, index and label; undefined in any other step. */
  readonly map: MapItem | undefined;
  /**
   * Fans this partition out at run time: return it from the function, and the function runs again once per item,
   * each its own step with `ctx.map` set; downstream assets receive the outputs as an array in item order.
   * @example
   * // given load: (file: string) => Promise<number>, listFiles: (day: string) => Promise<string[]>
   * asset({ key: "landing/files" }, async (ctx) => (ctx.map ? load(ctx.map.item as string) : ctx.expand(await listFiles(ctx.partition.key), { label: (f) => f })));
   */
  expand<I>(items: readonly I[], options?: { readonly label?: MapLabel<I> }): Expansion<I>;
}

/** The context of an asset with `map`: its function always runs on one item. */
export interface MappedContext<I> extends AssetContext {
  readonly map: MapItem<I>;
}
