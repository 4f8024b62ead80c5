import { CronExpressionParser } from "cron-parser";
import { z } from "zod";
import { DefinitionError } from "../errors/index.js";
import { calendarProblem, parseWallTime } from "./civil-date.js";
import { deepFreeze } from "./deep-freeze.js";
import { DATE_FORMAT, DATE_TIME_FORMAT } from "./key-codec.js";
import type { PartitionMappingSpec, PartitionsSpec, SingleDimensionPartitionsSpec, TimeCadence } from "./types.js";
import { isValidTimeZone } from "./zone-clock.js";

/** The cron and key format each fixed cadence stands for. */
export const FIXED_CADENCES: Readonly<Record<Exclude<TimeCadence, "cron">, { cron: string; format: string }>> = {
  hourly: { cron: "0 * * * *", format: DATE_TIME_FORMAT },
  daily: { cron: "0 0 * * *", format: DATE_FORMAT },
  weekly: { cron: "0 0 * * 1", format: DATE_FORMAT },
  monthly: { cron: "0 0 1 * *", format: DATE_FORMAT },
};

/** Separates dimension keys in a multi-partition key: `2025-03-15|eu`. */
export const DIMENSION_SEPARATOR = "|";

function custom<T>(check: (value: T) => string | undefined) {
  return (value: T, ctx: z.RefinementCtx) => {
    const message = check(value);
    if (message !== undefined) ctx.addIssue({ code: "custom", message });
  };
}

export const wallTimeSchema = z
  .string()
  .superRefine(
    custom((v: string) =>
      parseWallTime(v) === undefined
        ? `invalid date "${v}": ${calendarProblem(v) ?? "expected yyyy-MM-dd or yyyy-MM-ddTHH:mm (wall clock in the timezone)"}`
        : undefined,
    ),
  );

export const timezoneSchema = z
  .string()
  .superRefine(
    custom((v: string) => (isValidTimeZone(v) ? undefined : `unknown time zone "${v}" (expected an IANA name such as "Europe/Berlin")`)),
  );

export const endOffsetSchema = z.number().int("expected an integer number of windows");

/** Why a cron expression cannot bound windows, or undefined when it can. */
export function cronProblem(cron: string): string | undefined {
  const fields = cron
    .trim()
    .split(/\s+/)
    .filter((f) => f.length > 0);
  if (fields.length !== 5) {
    return `invalid cron "${cron}": expected 5 fields (minute hour day-of-month month day-of-week), got ${fields.length}`;
  }
  try {
    CronExpressionParser.parse(cron, { tz: "UTC" });
    return undefined;
  } catch (err) {
    return `invalid cron "${cron}": ${err instanceof Error ? err.message : String(err)}`;
  }
}

export const cronSchema = z.string().superRefine(custom(cronProblem));

export const keyFormatSchema = z
  .string()
  .min(1, "empty key format")
  .superRefine(custom((v: string) => (v.includes(DIMENSION_SEPARATOR) ? `key format "${v}" must not contain "|"` : undefined)));

/** Why a string cannot be a static or dynamic partition key, or undefined when it can. */
export function partitionKeyProblem(key: string): string | undefined {
  if (key.length === 0) return "empty partition key";
  if (key.includes(DIMENSION_SEPARATOR)) return `partition key "${key}" must not contain "|" (it separates dimensions)`;
  return undefined;
}

const keySchema = z.string().superRefine(custom(partitionKeyProblem));

export const keyListSchema = z
  .array(keySchema)
  .min(1, "expected at least one key")
  .superRefine((keys, ctx) => {
    const seen = new Set<string>();
    keys.forEach((key, i) => {
      if (seen.has(key)) ctx.addIssue({ code: "custom", message: `duplicate key "${key}"`, path: [i] });
      seen.add(key);
    });
  });

export const dynamicNameSchema = z
  .string()
  .superRefine(
    custom((v: string) =>
      v.trim().length === 0 ? "empty name" : v.includes(DIMENSION_SEPARATOR) ? `name "${v}" must not contain "|"` : undefined,
    ),
  );

/** Refinement: `end` (when given) after `start`. */
export function startBeforeEnd(value: { start: string; end?: string | undefined }, ctx: z.RefinementCtx): void {
  if (value.end === undefined) return;
  const start = parseWallTime(value.start);
  const end = parseWallTime(value.end);
  if (start !== undefined && end !== undefined && end <= start) {
    ctx.addIssue({ code: "custom", message: `end "${value.end}" must be after start "${value.start}"`, path: ["end"] });
  }
}

const timeSpecSchema = z
  .strictObject({
    kind: z.literal("time"),
    cadence: z.enum(["hourly", "daily", "weekly", "monthly", "cron"]),
    cron: cronSchema,
    start: wallTimeSchema,
    end: wallTimeSchema.optional(),
    timezone: timezoneSchema,
    endOffset: endOffsetSchema,
    format: keyFormatSchema,
  })
  .superRefine(startBeforeEnd)
  .superRefine((spec, ctx) => {
    if (spec.cadence === "cron") return;
    const fixed = FIXED_CADENCES[spec.cadence];
    if (spec.cron !== fixed.cron) {
      ctx.addIssue({
        code: "custom",
        message: `a ${spec.cadence} definition has cron "${fixed.cron}", not "${spec.cron}"`,
        path: ["cron"],
      });
    }
    if (spec.format !== fixed.format) {
      ctx.addIssue({
        code: "custom",
        message: `a ${spec.cadence} definition has format "${fixed.format}", not "${spec.format}"`,
        path: ["format"],
      });
    }
  });

const singleSpecSchema = z.union(
  [
    timeSpecSchema,
    z.strictObject({ kind: z.literal("static"), keys: keyListSchema }),
    z.strictObject({ kind: z.literal("dynamic"), name: dynamicNameSchema }),
  ],
  {
    error:
      "expected a single-dimension partitions definition: hourly(), daily(), weekly(), monthly(), timeWindows(), staticPartitions() or dynamicPartitions() (multi definitions do not nest)",
  },
);

/** Checks the dimensions of a multi definition: ≥ 2, unique usable names, at most one time dimension. */
export function dimensionsProblem(
  dimensions: readonly { name: string; partitions: { kind: string } }[],
): { message: string; path: (string | number)[] } | undefined {
  if (dimensions.length < 2) return { message: `expected at least 2 dimensions, got ${dimensions.length}`, path: [] };
  const seen = new Set<string>();
  for (const [i, { name }] of dimensions.entries()) {
    const problem =
      name.length === 0
        ? "empty dimension name"
        : name.includes(DIMENSION_SEPARATOR)
          ? `dimension name "${name}" must not contain "|"`
          : seen.has(name)
            ? `duplicate dimension "${name}"`
            : undefined;
    if (problem) return { message: problem, path: [i, "name"] };
    seen.add(name);
  }
  const timeDimensions = dimensions.filter((d) => d.partitions.kind === "time").map((d) => d.name);
  if (timeDimensions.length > 1) {
    return { message: `at most one time dimension is supported, got ${timeDimensions.join(", ")}`, path: [] };
  }
  return undefined;
}

const multiSpecSchema = z
  .strictObject({
    kind: z.literal("multi"),
    dimensions: z.array(z.strictObject({ name: z.string(), partitions: singleSpecSchema })),
  })
  .superRefine((spec, ctx) => {
    const problem = dimensionsProblem(spec.dimensions);
    if (problem) ctx.addIssue({ code: "custom", message: problem.message, path: ["dimensions", ...problem.path] });
  });

export const partitionsSpecSchema = z.union([singleSpecSchema, multiSpecSchema], {
  error: "expected a partitions definition (kind time, static, dynamic or multi)",
});
export const singleDimensionSpecSchema = singleSpecSchema;

const offsetSchema = z.number().int("expected an integer number of downstream windows");

export const timeWindowMappingSchema = z
  .strictObject({
    kind: z.literal("timeWindow"),
    startOffset: offsetSchema,
    endOffset: offsetSchema,
    allowPartial: z.literal(false, { error: "expected false (true, the default, is not stored)" }).optional(),
  })
  .superRefine((m, ctx) => {
    if (m.startOffset > m.endOffset) {
      ctx.addIssue({
        code: "custom",
        message: `startOffset ${m.startOffset} is after endOffset ${m.endOffset}: the window [start ${m.startOffset}, end ${m.endOffset}) would be empty`,
        path: ["startOffset"],
      });
    }
  });

export const staticMapSchema = z.record(
  z.string().superRefine(custom(partitionKeyProblem)),
  z.array(keySchema).min(1, "expected at least one downstream key"),
);

const singleMappingSchema = z.union(
  [
    z.strictObject({ kind: z.literal("identity") }),
    timeWindowMappingSchema,
    z.strictObject({ kind: z.literal("all") }),
    z.strictObject({ kind: z.literal("last") }),
    z.strictObject({ kind: z.literal("static"), map: staticMapSchema }),
  ],
  {
    error:
      "expected identity(), timeWindow(), allPartitions(), lastPartition() or staticMapping() (a multiMapping() entry cannot nest another multiMapping())",
  },
);

export const multiMappingDimensionsSchema = z
  .record(
    z.string().min(1, "empty dimension name"),
    z.strictObject({ upstreamDimension: z.string().min(1, "empty dimension name"), mapping: singleMappingSchema }),
  )
  .superRefine((dims, ctx) => {
    if (Object.keys(dims).length === 0) ctx.addIssue({ code: "custom", message: "expected at least one dimension" });
  });

export const partitionMappingSpecSchema = z.union(
  [singleMappingSchema, z.strictObject({ kind: z.literal("multi"), dimensions: multiMappingDimensionsSchema })],
  { error: "expected a partition mapping (kind identity, timeWindow, all, last, static or multi)" },
);

/** `a.b[2].c` for error messages. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const p of path) out += typeof p === "number" ? `[${p}]` : out === "" ? String(p) : `.${String(p)}`;
  return out;
}

/**
 * For a union that failed, the issue of the one branch whose `kind` matched
 * (so users read "keys: expected at least one key", not "Invalid input").
 */
function innermostIssue(issue: z.core.$ZodIssue, prefix: readonly PropertyKey[]): { issue: z.core.$ZodIssue; path: PropertyKey[] } {
  const path = [...prefix, ...issue.path];
  if (issue.code !== "invalid_union") return { issue, path };
  const matching = issue.errors.filter((branch) => !branch.some((i) => i.path.length === 1 && i.path[0] === "kind"));
  const inner = matching.length === 1 ? matching[0]![0] : undefined;
  if (!inner) return { issue, path };
  const deeper = innermostIssue(inner, path);
  // An unresolved union nested at the same place: the outer message says more.
  return deeper.issue.code === "invalid_union" && inner.path.length === 0 ? { issue, path } : deeper;
}

/**
 * Validates `value` with `schema`; on failure throws a DefinitionError naming
 * the field: `daily(): field "timezone": unknown time zone "Mars/Olympus"`.
 */
export function parseWith<T>(schema: z.ZodType<T>, value: unknown, where: string, fieldPrefix: readonly PropertyKey[] = []): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const { issue, path: issuePath } = innermostIssue(result.error.issues[0]!, []);
  let path = [...fieldPrefix, ...issuePath];
  let message = issue.message;
  if (issue.code === "unrecognized_keys") {
    path = [...path, issue.keys[0] ?? ""];
    message = "unknown option";
  }
  const field = formatPath(path);
  if (field === "") throw new DefinitionError(`${where}: ${message}`);
  throw new DefinitionError(`${where}: field "${field}": ${message}`, { location: { field } });
}

/**
 * Validates a partitions spec read back from JSON (a snapshot, the database)
 * and returns it frozen. Throws DefinitionError naming the bad field.
 */
export function parsePartitionsSpec(value: unknown): PartitionsSpec {
  return deepFreeze(parseWith(partitionsSpecSchema, value, "partitions spec") as PartitionsSpec);
}

/** Validates a single-dimension partitions spec (a dimension of a multi definition). */
export function parseSingleDimensionSpec(
  value: unknown,
  where: string,
  fieldPrefix: readonly PropertyKey[],
): SingleDimensionPartitionsSpec {
  return parseWith(singleSpecSchema, value, where, fieldPrefix) as SingleDimensionPartitionsSpec;
}

/** Validates a partition mapping spec read back from JSON and returns it frozen. */
export function parsePartitionMappingSpec(value: unknown): PartitionMappingSpec {
  return deepFreeze(parseWith(partitionMappingSpecSchema, value, "partition mapping") as PartitionMappingSpec);
}
