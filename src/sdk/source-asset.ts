import { z } from "zod";
import { DefinitionError } from "../errors/index.js";
import { baseShape, buildSpec, durationField, makeDefinition, parseDurationAt, type AssetDefinition } from "./asset.js";
import type { AssetConfigBase } from "./asset-config.js";
import { callerFile } from "./definition.js";
import type { Duration } from "./duration.js";
import type { JsonValue } from "./json.js";
import type { AssetSpec } from "./spec.js";
import type { TriggerSpec } from "./triggers.js";
import { definitionErrorFromZod } from "./zod-issues.js";

/** The config of a source asset: see sourceAsset(). */
export interface SourceAssetConfig extends Pick<
  AssetConfigBase,
  "key" | "partitions" | "group" | "owner" | "description" | "tags" | "metadata" | "deadline"
> {
  /**
   * How a partition is observed, e.g. fileExists("/landing/{partition}.csv"); `{partition}`, `{start}` and `{end}`
   * are filled in from the partition. Without it, partitions are only reported (`tributary report`).
   * @example sourceAsset({ key: "partner/feed", partitions: daily({ start: "2025-01-01" }), observe: fileExists("/landing/{partition}.csv") })
   */
  observe?: TriggerSpec;
  /**
   * Time between two checks of a partition not observed yet (default 1 min).
   * @example sourceAsset({ key: "partner/feed", partitions: daily({ start: "2025-01-01" }), observe: fileExists("/in/{partition}.csv"), pollInterval: "5m" })
   */
  pollInterval?: Duration;
  /**
   * How long a partition is looked for after its window ends (a partition without a window: after it is first
   * looked for) before it counts as timed out; no limit by default.
   * @example sourceAsset({ key: "partner/feed", partitions: daily({ start: "2025-01-01" }), observe: fileExists("/in/{partition}.csv"), timeout: "12h" })
   */
  timeout?: Duration;
}

/** What downstream functions receive from a source asset: its latest observation. */
export interface SourceObservation {
  readonly observedAt: string;
  /** What the observe trigger found (`fileExists`: `{ path, size, mtime }`); null for an observation reported by hand. */
  readonly payload: JsonValue;
}

const sourceConfigSchema = z.strictObject({
  key: baseShape.key,
  partitions: baseShape.partitions,
  group: baseShape.group,
  owner: baseShape.owner,
  description: baseShape.description,
  tags: baseShape.tags,
  metadata: baseShape.metadata,
  deadline: baseShape.deadline,
  observe: z
    .object(
      { kind: z.string().min(1), args: z.record(z.string(), z.unknown()) },
      {
        error: 'expected a trigger such as fileExists("/landing/{partition}.csv")',
      },
    )
    .optional(),
  pollInterval: durationField.optional(),
  timeout: durationField.optional(),
});

/**
 * Declares data produced outside Tributary; it is observed, not materialised.
 * @example sourceAsset({ key: "partner/feed", partitions: daily({ start: "2025-01-01" }),
 *   observe: fileExists("/landing/{partition}.csv"), pollInterval: "5m" })
 */
export function sourceAsset(config: SourceAssetConfig): AssetDefinition<SourceObservation> {
  const definedIn = callerFile();
  const build = (cfg: SourceAssetConfig): AssetDefinition<SourceObservation> => {
    const parsed = sourceConfigSchema.safeParse(cfg);
    if (!parsed.success) {
      throw definitionErrorFromZod("sourceAsset()", parsed.error, typeof cfg?.key === "string" ? { assetKey: cfg.key } : {});
    }
    const { observe, pollInterval, timeout, ...rest } = parsed.data;
    const spec = buildSpec(rest, "source", {
      observe: (observe as TriggerSpec | undefined) ?? null,
      pollIntervalMs: pollInterval === undefined ? null : parseDurationAt(cfg.key, pollInterval, "pollInterval"),
      observeTimeoutMs: timeout === undefined ? null : parseDurationAt(cfg.key, timeout, "timeout"),
    });
    checkObserveTemplates(spec);
    return makeDefinition<SourceObservation>("source", spec, undefined, definedIn, (changes) =>
      build({ ...cfg, ...(changes as Partial<SourceAssetConfig>) }),
    );
  };
  return build(config);
}

/**
 * The triggerer fills `{partition}`, `{start}` and `{end}` in an observe
 * trigger's string args from the partition it observes: a field the asset's
 * partitions cannot give would fail every check, so it fails the definition.
 */
function checkObserveTemplates(spec: AssetSpec): void {
  if (!spec.observe) return;
  const p = spec.partitions;
  const timed = p !== null && (p.kind === "time" || (p.kind === "multi" && p.dimensions.some((d) => d.partitions.kind === "time")));
  for (const [arg, value] of Object.entries(spec.observe.args)) {
    if (typeof value !== "string") continue;
    for (const [, name] of value.replace(/\{\{|\}\}/g, "").matchAll(/\{\s*(partition|start|end)\s*\}/g)) {
      const missing = name === "partition" ? p === null : !timed;
      if (!missing) continue;
      const has = p === null ? "it is not partitioned" : `its partitions (${p.kind}) have no time window`;
      throw new DefinitionError(
        `asset "${spec.key}": field "observe.args.${arg}": the template "${value}" uses {${name}}, but ${has}; ` +
          `remove {${name}} or give the asset ${name === "partition" ? "partitions" : "time partitions"}`,
        { code: "OBSERVE_TEMPLATE_FIELD_MISSING", location: { assetKey: spec.key, field: `observe.args.${arg}` } },
      );
    }
  }
}
