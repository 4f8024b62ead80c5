import { z } from "zod";
import { InputError } from "../errors/index.js";
import {
  definitionKind,
  isTriggerKindKnown,
  type AssetContext,
  type AssetDefinition,
  type CheckDefinition,
  type TriggerSpec,
} from "../sdk/index.js";
import { partitionInfo, partitionSpace, type PartitionContext } from "../partitions/index.js";
import { standaloneTry } from "../executor/runtime/index.js";
import { MemoryLog, type LogEntry } from "./memory-log.js";
import type { StepRef, TriggerPayload } from "./materialize-types.js";
import { payloadOf, secretsOf } from "./test-answers.js";
import { EXPORT_NAME } from "./definitions.js";

export interface BuildContextOptions {
  /** The asset (or the asset of the check) whose function is called. */
  readonly asset: AssetDefinition | CheckDefinition;
  /** The partition key; leave it out for an unpartitioned asset. */
  readonly partition?: string;
  /** `ctx.map` of a mapped step. */
  readonly map?: { readonly index: number; readonly item: unknown; readonly label?: string | null };
  /** What `ctx.secrets.get(name)` answers. Without it, secrets come from the environment, as in a worker. */
  readonly secrets?: Readonly<Record<string, string>>;
  /** `ctx.defer` / `ctx.waitFor` resolve at once with this payload; without it they throw. */
  readonly triggers?: { readonly resolve: TriggerPayload };
  /** Keys of the dynamic partition set of a dynamically partitioned asset, by name. */
  readonly dynamicPartitions?: Readonly<Record<string, readonly string[]>>;
  readonly runId?: string;
  readonly tryNumber?: number;
}

/** An asset function's context for calling it directly, and what the call left behind. */
export interface TestContext extends AssetContext {
  /** What the function logged through `ctx.log` (console output is not captured here). */
  readonly logs: readonly LogEntry[];
  /** The reason given to `ctx.skip`, once it was called (the call also throws). */
  readonly skipReason: string | undefined;
  /** Keys the function added with `ctx.addDynamicPartitions`, by set name. */
  readonly addedPartitions: Readonly<Record<string, readonly string[]>>;
}

const optionsSchema = z.strictObject({
  asset: z.custom<AssetDefinition | CheckDefinition>((v) => definitionKind(v) === "asset" || definitionKind(v) === "check", {
    message: "must be an asset or a check definition",
  }),
  partition: z.string().optional(),
  map: z.strictObject({ index: z.number().int().min(0), item: z.unknown(), label: z.string().nullable().optional() }).optional(),
  secrets: z.record(z.string(), z.string()).optional(),
  triggers: z.strictObject({ resolve: z.unknown() }).optional(),
  dynamicPartitions: z.record(z.string(), z.array(z.string())).optional(),
  runId: z.string().min(1).optional(),
  tryNumber: z.number().int().min(1).optional(),
});

/**
 * The context a step's function receives, for calling an asset's (or a check's) function directly in a test:
 * its partition with the window and dimensions of the asset's partitions definition, a log kept in memory,
 * secrets from the map given, `ctx.expand`, and deferred waits answered by `triggers.resolve`.
 * @example
 * // given dailyRevenue: AssetDefinition<number>
 * const ctx = buildContext({ asset: dailyRevenue, partition: "2025-03-10" });
 * const total = await dailyRevenue.fn!(ctx, { orders: [{ amount: 12.5 }] });
 * ctx.logs; // what it logged
 */
export function buildContext(options: BuildContextOptions): TestContext {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const at = issue.path.length > 0 ? `options.${issue.path.join(".")}` : "options";
    throw new InputError(`buildContext: ${at}: ${issue.message}`, { code: "BUILD_CONTEXT_OPTIONS_INVALID", location: { field: at } });
  }
  const def = options.asset;
  const isCheck = definitionKind(def) === "check";
  const assetKey = isCheck ? (def as CheckDefinition).spec.assetKey : (def as AssetDefinition).key;
  const spec = isCheck ? null : (def as AssetDefinition).spec;
  const partition = options.partition ?? "";
  const dynamic: Record<string, string[]> = Object.fromEntries(
    Object.entries(options.dynamicPartitions ?? {}).map(([n, k]) => [n, [...k]]),
  );
  if (spec?.partitions && partition === "") {
    throw new InputError(`buildContext: asset "${assetKey}" is partitioned: give options.partition`, {
      code: "BUILD_CONTEXT_OPTIONS_INVALID",
      location: { assetKey, field: "partition" },
    });
  }
  if (spec?.partitions) {
    const ctx: PartitionContext = { dynamicKeys: (name) => dynamic[name] ?? [] };
    if (spec.partitions.kind !== "dynamic" && !partitionSpace(spec.partitions, ctx).has(partition)) {
      throw new InputError(`buildContext: "${partition}" is not a partition of asset "${assetKey}"`, {
        code: "BUILD_CONTEXT_OPTIONS_INVALID",
        location: { assetKey, partitionKey: partition, field: "partition" },
      });
    }
  } else if (spec && partition !== "") {
    throw new InputError(`buildContext: asset "${assetKey}" is not partitioned: leave options.partition out`, {
      code: "BUILD_CONTEXT_OPTIONS_INVALID",
      location: { assetKey, field: "partition" },
    });
  }
  const added: Record<string, string[]> = {};
  const log = new MemoryLog();
  const { active, context } = standaloneTry(
    {
      stepId: 1,
      runId: options.runId ?? "in-memory",
      tryNumber: options.tryNumber ?? 1,
      assetKey,
      partitionKey: partition,
      mapIndex: options.map?.index ?? -1,
      partition: partitionInfo(spec?.partitions ?? null, partition),
      file: "memory",
      exportName: EXPORT_NAME,
      timeoutMs: null,
      logRef: "(in memory)",
      ...(options.map ? { map: { index: options.map.index, item: options.map.item, label: options.map.label ?? null } } : {}),
    },
    {
      importModule: () => Promise.resolve({}),
      addDynamicPartitions: (name, keys) => {
        const list = (added[name] ??= []);
        for (const k of keys) if (!list.includes(k)) list.push(k);
        return Promise.resolve();
      },
      materialized: () => Promise.resolve(undefined),
      secrets: secretsOf(options.secrets, "buildContext"),
    },
    log,
  );
  const step: StepRef = { assetKey, partitionKey: partition };
  const wait = async (method: string, trigger: TriggerSpec): Promise<unknown> => {
    const kind = (trigger as { kind?: unknown } | null)?.kind;
    if (typeof kind !== "string" || !isTriggerKindKnown(kind)) {
      // The context's own wait validates the trigger and says what is wrong with it.
      return (context[method as "defer"] as (t: TriggerSpec) => Promise<unknown>)(trigger);
    }
    const resolver = options.triggers;
    if (!resolver) {
      throw new InputError(
        `buildContext: ctx.${method}(${kind}) would wait for the trigger; give buildContext({ triggers: { resolve: payload } }) ` +
          `to answer it, or test the whole flow with materializeInMemory`,
        { code: "BUILD_CONTEXT_WAIT_UNRESOLVED", location: { assetKey } },
      );
    }
    return payloadOf(resolver, { kind, args: (trigger as { args?: Record<string, unknown> }).args ?? {} }, step);
  };
  return Object.freeze({
    ...context,
    defer: <T>(trigger: TriggerSpec) => wait("defer", trigger) as Promise<T>,
    waitFor: <T>(trigger: TriggerSpec) => wait("waitFor", trigger) as Promise<T>,
    get logs() {
      return log.entries;
    },
    get skipReason() {
      return active.skipReason;
    },
    addedPartitions: added,
  });
}
