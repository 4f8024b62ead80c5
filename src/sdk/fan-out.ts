/**
 * Runtime fan-out (mapped steps): an asset step whose `map` function (or
 * whose function, through `ctx.expand`) answers a list of items expands into
 * one mapped step per item, added to the run when it ends. Downstream assets
 * receive the mapped steps' outputs as one array, in item order.
 */

/** Items per fan-out unless the asset sets `maxMapItems`. */
export const DEFAULT_MAX_MAP_ITEMS = 10_000;
/** The most `maxMapItems` may be: every item is a step row of the run. */
export const MAX_MAP_ITEMS_LIMIT = 100_000;
/** Longest label kept for a mapped step; longer ones are cut. */
export const MAX_MAP_LABEL_LENGTH = 200;

/** What one mapped step runs on: `ctx.map` inside the asset function. */
export interface MapItem<I = unknown> {
  /** 0-based position of the item in the list; the gathered array has its output at this index. */
  readonly index: number;
  readonly item: I;
  /** The readable label given by `mapLabel` / `ctx.expand(items, { label })`, or null. */
  readonly label: string | null;
}

export type MapLabel<I> = (item: I, index: number) => string;

/** Recognised across module instances (a definitions file may reach the SDK through its own copy). */
const EXPANSION_BRAND: unique symbol = Symbol.for("tributary.expansion") as never;

/** What `ctx.expand(items)` returns; the asset function returns it to fan out. */
export interface Expansion<I = unknown> {
  readonly [EXPANSION_BRAND]: true;
  readonly items: unknown;
  readonly label: MapLabel<I> | undefined;
}

/**
 * The value `ctx.expand(items, { label })` returns: an asset function returns it to fan out.
 * @example makeExpansion(["eu", "us"], (region: string) => region.toUpperCase())
 */
export function makeExpansion<I>(items: unknown, label: MapLabel<I> | undefined): Expansion<I> {
  return Object.freeze({ [EXPANSION_BRAND]: true as const, items, label });
}

/**
 * Whether an asset function's return value is a fan-out (`ctx.expand(…)`), also one made by another copy of the SDK.
 * @example isExpansion(makeExpansion([1, 2], undefined)) // true
 */
export function isExpansion(value: unknown): value is Expansion {
  return typeof value === "object" && value !== null && (value as Partial<Expansion>)[EXPANSION_BRAND] === true;
}

/** The functions of a fan-out declared on an asset (never serialised: they run in the worker). */
export interface FanOutFunctions {
  readonly map?: (inputs: never) => unknown;
  readonly label?: MapLabel<never>;
}

/**
 * The output type downstream assets see: the function's own, or, when it may
 * return `ctx.expand(…)`, an array of what its mapped runs return.
 */
export type GatheredOutput<T> = [Extract<T, Expansion<never>>] extends [never] ? T : Exclude<T, Expansion<never>>[];
