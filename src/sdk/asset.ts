import { z } from "zod";
import { DefinitionError } from "../errors/index.js";
import type { PartitionMappingSpec } from "../partitions/index.js";
import { validateAutomation } from "./automation.js";
import { DEFAULT_CALLBACK_TIMEOUT_MS, type DefinitionCallbacks } from "./callbacks.js";
import type { AssetContext, MappedContext } from "./context.js";
import { callerFile, DEFINITION_BRAND, type Branded } from "./definition.js";
import { DEFAULT_ERASE_TIMEOUT_MS, type EraseHook } from "./erase.js";
import { parseDuration, type Duration } from "./duration.js";
import { DEFAULT_MAX_MAP_ITEMS, MAX_MAP_ITEMS_LIMIT, type FanOutFunctions, type GatheredOutput } from "./fan-out.js";
import { assertJson, deepFreeze, type JsonValue } from "./json.js";
import { EXECUTORS, TRIGGER_RULES, type AssetSpec, type DepSpec, type RetryPolicySpec } from "./spec.js";
import type { TriggerSpec } from "./triggers.js";
import { definitionErrorFromZod } from "./zod-issues.js";
import { rememberDepTarget, rememberUpstreams } from "./upstream-definitions.js";
import type { AssetConfig, AssetConfigBase, MappedAssetConfig, RetryConfig } from "./asset-config.js";

declare const OUTPUT: unique symbol;
declare const CARDINALITY: unique symbol;

/** A partition mapping that yields one upstream value per downstream partition. */
export type SingleMapping = PartitionMappingSpec & { readonly [CARDINALITY]: "one" };
/** A partition mapping that yields an array of upstream values, in partition order. */
export type ManyMapping = PartitionMappingSpec & { readonly [CARDINALITY]: "many" };

export interface AssetDefinition<TOut = unknown> extends Branded {
  readonly key: string;
  readonly spec: AssetSpec;
  /** The asset function; absent on source assets. */
  readonly fn: AssetFunction | undefined;
  /** The file whose code created this definition. */
  readonly definedIn: string | undefined;
  /** onSuccess / onFailure / onRetry (never serialised: they run in the worker that ran the try). */
  readonly callbacks: DefinitionCallbacks;
  /** `map` / `mapLabel` (never serialised: they run in the worker that expands the step). */
  readonly fanOut: FanOutFunctions;
  /** `erase` (never serialised: an erasure request calls it; the spec's `erase` says it exists). */
  readonly erase: EraseHook | undefined;
  /** A copy with some config changed (definitions are frozen). */
  with(changes: Partial<AssetConfigBase>): AssetDefinition<TOut>;
  /** Phantom: the output type downstream functions receive. */
  readonly [OUTPUT]?: TOut;
}

export type AssetFunction = (ctx: AssetContext, inputs: Record<string, unknown>) => unknown;

export interface Dep<T = unknown> {
  readonly kind: "dep";
  readonly assetKey: string;
  readonly mapping: PartitionMappingSpec | null;
  readonly [OUTPUT]?: T;
}

export type OutputOf<A> = A extends AssetDefinition<infer T> ? T : never;

/**
 * One upstream partition's value as a reader receives it: the stored output, or `null` when the partition has
 * none — an outside producer reported it (`tributary report`, an `external` event: the partition counts as
 * materialised, but Tributary holds no value of it), its function returned nothing, or, under a trigger rule
 * other than `all_success`, it failed or was skipped. A source asset's reported observation arrives as
 * `{ observedAt, payload: null }`.
 */
export type Upstream<T> = T | null;

/**
 * A dependency with an explicit partition mapping. The mapping decides the
 * argument's type: a single value for identity/last, an array in partition
 * order for time windows, all partitions, static and multi mappings.
 * Each upstream value may be `null` (see {@link Upstream}).
 * A key string instead of an asset gives an untyped dependency: `T` is the upstream's output.
 * @example
 * // given orders: AssetDefinition<{ id: string; rows: number }>
 * dep(orders, timeWindow({ startOffset: -6 }))  // ({ id, rows } | null)[] for the last 7 days
 */
export function dep<A extends AssetDefinition>(upstream: A, mapping: ManyMapping): Dep<Upstream<OutputOf<A>>[]>;
export function dep<A extends AssetDefinition>(upstream: A, mapping?: SingleMapping): Dep<Upstream<OutputOf<A>>>;
export function dep<T = unknown>(upstreamKey: string, mapping: ManyMapping): Dep<Upstream<T>[]>;
export function dep<T = unknown>(upstreamKey: string, mapping?: PartitionMappingSpec): Dep<Upstream<T>>;
export function dep(upstream: AssetDefinition | string, mapping?: PartitionMappingSpec): Dep {
  const assetKey = typeof upstream === "string" ? upstream : upstream?.key;
  if (typeof assetKey !== "string" || assetKey === "") {
    throw new DefinitionError(
      `dep(): expected an asset definition or an asset key string, got ${describe(upstream)}; ` +
        `if this is an import from another file, check for a circular import between definition files`,
      { location: { field: "deps" } },
    );
  }
  const made = deepFreeze({ kind: "dep" as const, assetKey, mapping: mapping ?? null });
  if (typeof upstream !== "string") rememberDepTarget(made, upstream);
  return made;
}

export type DepInput = Dep | AssetDefinition;
export type DepsRecord = Readonly<Record<string, DepInput>>;

export type InputsOf<D extends DepsRecord | undefined> = D extends DepsRecord
  ? { readonly [K in keyof D]: D[K] extends Dep<infer T> ? T : D[K] extends AssetDefinition<infer T> ? Upstream<T> : never }
  : Record<string, never>;

const KEY_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]*(\/[A-Za-z0-9_][A-Za-z0-9_.-]*)*$/;
const keySchema = z
  .string({ error: "an asset key string is required" })
  .regex(KEY_RE, "must be segments of letters, digits, '_', '.' and '-' joined by '/', e.g. \"sales/orders\"");
const nameSchema = z.string().min(1).max(200);
export const durationField = z.union([z.number(), z.string()]);
const callbackField = z.custom<(...args: never[]) => unknown>((v) => typeof v === "function", {
  error: "must be a function, e.g. async (ctx, error) => { … }",
});

/** The fields every kind of asset declares, validated alike. */
export const baseShape = {
  key: keySchema,
  partitions: z
    .object(
      { kind: z.enum(["time", "static", "dynamic", "multi"]) },
      {
        error: 'expected a partitions definition such as daily({ start: "2025-01-01" })',
      },
    )
    .loose()
    .optional(),
  automation: z.object({ kind: z.string() }, { error: "expected onCron(...), eager() or onMissing()" }).loose().optional(),
  group: nameSchema.regex(/^[A-Za-z0-9_.-]+$/, "letters, digits, '_', '.' and '-' only").optional(),
  owner: nameSchema.optional(),
  description: z.string().max(10_000).optional(),
  tags: z.record(z.string(), z.string()).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  pool: nameSchema.regex(/^[A-Za-z0-9_.-]+$/, "letters, digits, '_', '.' and '-' only").optional(),
  poolSlots: z.number().int().min(1).optional(),
  priority: z.number().int().min(-1_000_000).max(1_000_000).optional(),
  retries: z
    .union([
      z.number().int().min(0).max(1000),
      z.strictObject({
        max: z.number().int().min(0).max(1000),
        delay: durationField.optional(),
        backoff: z.enum(["fixed", "linear", "exponential"]).optional(),
        maxDelay: durationField.optional(),
        jitter: z.boolean().optional(),
      }),
    ])
    .optional(),
  timeout: durationField.optional(),
  maxConcurrency: z.number().int().min(1).optional(),
  maxActiveRuns: z.number().int().min(1).optional(),
  catchup: z.boolean().optional(),
  triggerRule: z.enum(TRIGGER_RULES).optional(),
  executor: z.enum(EXECUTORS).optional(),
  queue: nameSchema.optional(),
  codeVersion: z.string().min(1).max(200).optional(),
  deadline: durationField.optional(),
  onSuccess: callbackField.optional(),
  onFailure: callbackField.optional(),
  onRetry: callbackField.optional(),
  callbackTimeout: durationField.optional(),
};

const assetConfigSchema = z.strictObject({
  ...baseShape,
  map: z
    .custom<(...args: never[]) => unknown>((v) => typeof v === "function", {
      error: "must be a function of the upstream values answering an array of items, e.g. ({ files }) => files.paths",
    })
    .optional(),
  mapLabel: z
    .custom<(...args: never[]) => unknown>((v) => typeof v === "function", {
      error: "must be a function (item, index) => string",
    })
    .optional(),
  maxMapItems: z.number().int().min(1).max(MAX_MAP_ITEMS_LIMIT).optional(),
  erase: z
    .custom<EraseHook>((v) => typeof v === "function", {
      error: "must be a function removing the partitions' data, e.g. async (ctx, { partitions }) => { … }",
    })
    .optional(),
  eraseTimeout: durationField.optional(),
  retention: z
    .strictObject({ outputs: durationField.optional(), logs: durationField.optional(), history: durationField.optional() })
    .optional(),
  deps: z.record(z.string().regex(/^[A-Za-z_$][A-Za-z0-9_$]*$/, "dependency names must be identifiers"), z.unknown()).optional(),
});

function describe(value: unknown): string {
  if (value === undefined) return "undefined";
  if (value === null) return "null";
  if (typeof value === "object") return Array.isArray(value) ? "an array" : "an object";
  return `${typeof value} ${JSON.stringify(value)}`;
}

function toDepSpecs(assetKey: string, deps: Record<string, unknown> | undefined): DepSpec[] {
  if (!deps) return [];
  return Object.entries(deps).map(([name, value]) => {
    const v = value as Partial<Dep> & Partial<AssetDefinition>;
    if (v && typeof v === "object" && v.kind === "dep" && typeof v.assetKey === "string") {
      return { name, assetKey: v.assetKey, mapping: v.mapping ?? null };
    }
    if (v && typeof v === "object" && typeof v.key === "string" && v.spec) {
      return { name, assetKey: v.key, mapping: null };
    }
    throw new DefinitionError(
      `asset "${assetKey}": field "deps.${name}": expected an asset or dep(asset, mapping), got ${describe(value)}; ` +
        `an undefined value usually means a circular import between definition files`,
      { location: { assetKey, field: `deps.${name}` } },
    );
  });
}

function retryPolicy(assetKey: string, retries: number | RetryConfig | undefined): RetryPolicySpec {
  const r = typeof retries === "number" ? { max: retries } : (retries ?? { max: 0 });
  const maxDelayMs = r.maxDelay === undefined ? null : parseDurationAt(assetKey, r.maxDelay, "retries.maxDelay");
  return {
    max: r.max,
    delayMs: r.delay === undefined ? 30_000 : parseDurationAt(assetKey, r.delay, "retries.delay"),
    backoff: r.backoff ?? "fixed",
    maxDelayMs,
    jitter: r.jitter ?? false,
  };
}

export function parseDurationAt(assetKey: string, value: unknown, field: string): number {
  try {
    return parseDuration(value, field);
  } catch (err) {
    throw withAsset(err, assetKey);
  }
}

function withAsset(err: unknown, assetKey: string): unknown {
  if (err instanceof DefinitionError && !err.location?.assetKey) {
    return new DefinitionError(`asset "${assetKey}": ${err.message}`, {
      location: { ...err.location, assetKey },
      code: err.code,
      cause: err.cause,
    });
  }
  return err;
}

/**
 * Validates a config object and returns the serialised spec; shared by asset() and sourceAsset().
 * @example buildSpec({ key: "sales/orders", retries: 2 }, "asset", { observe: null, pollIntervalMs: null, observeTimeoutMs: null })
 */
export function buildSpec(
  raw: unknown,
  kind: "asset" | "source",
  extra: { observe: TriggerSpec | null; pollIntervalMs: number | null; observeTimeoutMs: number | null },
  schema: z.ZodType = assetConfigSchema,
): AssetSpec {
  const rawKey = (raw as { key?: unknown } | null)?.key;
  const keyForErrors = typeof rawKey === "string" ? rawKey : undefined;
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    throw definitionErrorFromZod(kind === "asset" ? "asset()" : "sourceAsset()", parsed.error, {
      ...(keyForErrors ? { assetKey: keyForErrors } : {}),
    });
  }
  const c = parsed.data as AssetConfig & { deps?: Record<string, unknown> };
  const key = c.key;
  try {
    if (c.mapLabel !== undefined && c.map === undefined) {
      throw new DefinitionError(
        `asset "${key}": field "mapLabel": labels items of a \`map\`, which the asset does not declare; ` +
          `declare map, or label items in ctx.expand(items, { label })`,
        { location: { assetKey: key, field: "mapLabel" } },
      );
    }
    if (c.metadata !== undefined) assertJson(c.metadata, "metadata");
    if (c.automation !== undefined) validateAutomation(c.automation);
    const spec: AssetSpec = {
      key,
      kind,
      group: c.group ?? (key.includes("/") ? key.slice(0, key.indexOf("/")) : "default"),
      owner: c.owner ?? null,
      description: c.description ?? null,
      tags: c.tags ?? {},
      metadata: (c.metadata ?? {}) as Record<string, JsonValue>,
      partitions: c.partitions ?? null,
      deps: toDepSpecs(key, c.deps),
      automation: c.automation ?? null,
      pool: c.pool ?? null,
      poolSlots: c.poolSlots ?? 1,
      priority: c.priority ?? 0,
      retries: retryPolicy(key, c.retries),
      timeoutMs: c.timeout === undefined ? null : parseDuration(c.timeout, "timeout"),
      maxConcurrency: c.maxConcurrency ?? null,
      maxActiveRuns: c.maxActiveRuns ?? null,
      catchup: c.catchup ?? false,
      triggerRule: c.triggerRule ?? "all_success",
      executor: c.executor ?? "local",
      queue: c.queue ?? null,
      codeVersion: c.codeVersion ?? null,
      deadlineMs: c.deadline === undefined ? null : parseDuration(c.deadline, "deadline"),
      ...extra,
      ...(c.retention?.outputs !== undefined || c.retention?.logs !== undefined || c.retention?.history !== undefined
        ? {
            retention: {
              ...(c.retention.outputs !== undefined ? { outputsMs: retentionMs(key, "outputs", c.retention.outputs) } : {}),
              ...(c.retention.logs !== undefined ? { logsMs: retentionMs(key, "logs", c.retention.logs) } : {}),
              ...(c.retention.history !== undefined ? { historyMs: retentionMs(key, "history", c.retention.history) } : {}),
            },
          }
        : {}),
      ...(c.erase !== undefined
        ? { erase: { timeoutMs: c.eraseTimeout === undefined ? DEFAULT_ERASE_TIMEOUT_MS : parseDuration(c.eraseTimeout, "eraseTimeout") } }
        : {}),
      ...(c.map !== undefined || c.maxMapItems !== undefined
        ? { fanOut: { declared: c.map !== undefined, maxItems: c.maxMapItems ?? DEFAULT_MAX_MAP_ITEMS } }
        : {}),
    };
    for (const d of spec.deps) {
      if (d.assetKey === key) {
        throw new DefinitionError(`asset "${key}": field "deps.${d.name}": an asset cannot depend on itself`, {
          location: { assetKey: key, field: `deps.${d.name}` },
        });
      }
    }
    assertJson(spec, "config");
    return deepFreeze(spec);
  } catch (err) {
    throw withAsset(err, key);
  }
}

export function makeDefinition<TOut>(
  brand: "asset" | "source",
  spec: AssetSpec,
  fn: AssetFunction | undefined,
  definedIn: string | undefined,
  rebuild: (changes: Partial<AssetConfigBase>) => AssetDefinition<TOut>,
  callbacks: DefinitionCallbacks = NO_CALLBACKS,
  fanOut: FanOutFunctions = NO_FAN_OUT,
  erase?: EraseHook,
): AssetDefinition<TOut> {
  const def = {
    [DEFINITION_BRAND]: brand,
    key: spec.key,
    spec,
    fn,
    definedIn,
    callbacks,
    fanOut,
    erase,
    with: rebuild,
  };
  return Object.freeze(def) as unknown as AssetDefinition<TOut>;
}

const NO_CALLBACKS: DefinitionCallbacks = Object.freeze({ timeoutMs: DEFAULT_CALLBACK_TIMEOUT_MS });
const NO_FAN_OUT: FanOutFunctions = Object.freeze({});

/** The fan-out functions of a (validated) config. */
function fanOutOf(config: AssetConfig): FanOutFunctions {
  if (!config.map) return NO_FAN_OUT;
  const functions: { map: NonNullable<FanOutFunctions["map"]>; label?: NonNullable<FanOutFunctions["label"]> } = {
    map: config.map as NonNullable<FanOutFunctions["map"]>,
  };
  if (config.mapLabel) functions.label = config.mapLabel;
  return Object.freeze(functions);
}

/** Shortest and longest retention an asset may declare. */
const MIN_RETENTION_MS = 3_600_000;
const MAX_RETENTION_MS = 3_650 * 86_400_000;

function retentionMs(assetKey: string, what: "outputs" | "logs" | "history", value: Duration): number {
  const field = `retention.${what}`;
  const ms = parseDuration(value, field);
  if (ms < MIN_RETENTION_MS || ms > MAX_RETENTION_MS) {
    throw new DefinitionError(`asset "${assetKey}": field "${field}": ${JSON.stringify(value)} must be between 1h and 3650d`, {
      location: { assetKey, field },
    });
  }
  return ms;
}

/** The hooks of a (validated) config; buildSpec has checked they are functions. */
function callbacksOf(config: AssetConfigBase): DefinitionCallbacks {
  const { onSuccess, onFailure, onRetry, callbackTimeout } = config;
  if (!onSuccess && !onFailure && !onRetry && callbackTimeout === undefined) return NO_CALLBACKS;
  return Object.freeze({
    ...(onSuccess ? { onSuccess } : {}),
    ...(onFailure ? { onFailure } : {}),
    ...(onRetry ? { onRetry } : {}),
    timeoutMs:
      callbackTimeout === undefined ? DEFAULT_CALLBACK_TIMEOUT_MS : parseDurationAt(config.key, callbackTimeout, "callbackTimeout"),
  });
}

/**
 * Declares an asset: a persistent thing `fn` writes, partition by partition.
 * The upstream values arrive as the second argument, typed from `deps`; each
 * may be null (a partition reported from outside has no stored value).
 * With `map`, the function runs once per item `map` answers (`ctx.map`), and
 * downstream assets receive the outputs as an array in item order.
 * @example
 * // given files: AssetDefinition<{ paths: string[] }>, parse: (path: string) => Promise<unknown>
 * const orders = asset({ key: "sales/orders", partitions: daily({ start: "2025-01-01" }) },
 *   async (ctx) => ({ rows: 42, day: ctx.partition.key }));
 * const summary = asset({ key: "sales/summary", partitions: daily({ start: "2025-01-01" }), deps: { orders } },
 *   async (_ctx, { orders }) => (orders?.rows ?? 0) * 2);   // null: the day was reported, not materialised
 * const parsed = asset({ key: "sales/parsed", deps: { files }, map: ({ files }) => files?.paths ?? [] },
 *   async (ctx) => parse(ctx.map.item));   // downstream receives parsed outputs as an array
 */
export function asset<const D extends DepsRecord | undefined, I, T>(
  config: MappedAssetConfig<D, I>,
  fn: (ctx: MappedContext<I>, inputs: InputsOf<D>) => T | Promise<T>,
): AssetDefinition<Awaited<T>[]>;
export function asset<const D extends DepsRecord | undefined, T>(
  config: AssetConfig<D>,
  fn: (ctx: AssetContext, inputs: InputsOf<D>) => T | Promise<T>,
): AssetDefinition<GatheredOutput<Awaited<T>>>;
export function asset(
  configIn: AssetConfig | MappedAssetConfig<DepsRecord | undefined, unknown>,
  fnIn: (ctx: never, inputs: never) => unknown,
): AssetDefinition {
  const config = configIn as AssetConfig;
  const fn = fnIn as AssetFunction;
  const key = (config as { key?: unknown } | null)?.key;
  if (typeof fn !== "function") {
    throw new DefinitionError(`asset${typeof key === "string" ? ` "${key}"` : "()"}: the second argument must be the asset function`, {
      location: { ...(typeof key === "string" ? { assetKey: key } : {}), field: "fn" },
    });
  }
  const spec = buildSpec(config, "asset", { observe: null, pollIntervalMs: null, observeTimeoutMs: null });
  const definedIn = callerFile();
  const build = (
    cfg: AssetConfig,
    built = buildSpec(cfg, "asset", { observe: null, pollIntervalMs: null, observeTimeoutMs: null }),
  ): AssetDefinition => {
    const def: AssetDefinition = makeDefinition(
      "asset",
      built,
      fn,
      definedIn,
      (changes) => build({ ...cfg, ...changes }),
      callbacksOf(cfg),
      fanOutOf(cfg),
      cfg.erase,
    );
    rememberUpstreams(def, cfg.deps);
    return def;
  };
  return build(config, spec);
}
