import { z } from "zod";
import { DefinitionError } from "../errors/index.js";
import { callerFile, DEFINITION_BRAND, type Branded } from "./definition.js";
import { deepFreeze, findNonJson, type JsonValue } from "./json.js";
import { definitionErrorFromZod } from "./zod-issues.js";

/**
 * A trigger is a serialisable description of an async check the triggerer
 * runs. Path and key templates may use `{partition}`, `{start}`, `{end}`.
 */
export interface TriggerSpec {
  readonly kind: string;
  readonly args: Readonly<Record<string, unknown>>;
}

function make<S extends z.ZodType>(kind: string, schema: S, args: unknown): TriggerSpec {
  const parsed = schema.safeParse(args);
  if (!parsed.success) throw definitionErrorFromZod(`trigger ${kind}()`, parsed.error);
  return deepFreeze({ kind, args: parsed.data as Record<string, unknown> });
}

const template = z.string().min(1);

/**
 * Fires at an instant (ISO string or Date).
 * @example
 * asset({ key: "reports/after_close" }, async (ctx) => ctx.defer(at("2025-03-10T18:00:00Z")));
 */
export function at(instant: string | Date): TriggerSpec {
  const iso = instant instanceof Date ? instant.toISOString() : instant;
  return make("at", z.object({ at: z.iso.datetime({ offset: true }) }), { at: iso });
}

/**
 * Fires when a file exists.
 * @example fileExists("/data/in/{partition}.csv")
 */
export function fileExists(path: string): TriggerSpec {
  return make("fileExists", z.object({ path: template }), { path });
}

/**
 * Fires when an S3 object exists.
 * @example s3ObjectExists("partner-drops", "exports/{partition}/_SUCCESS")
 */
export function s3ObjectExists(bucket: string, key: string): TriggerSpec {
  return make("s3ObjectExists", z.object({ bucket: z.string().min(1), key: template }), { bucket, key });
}

/**
 * Fires when the URL answers with the expected status (default 200).
 * @example httpOk("https://partner.example/exports/{partition}", { status: 204 })
 */
export function httpOk(url: string, options: { status?: number } = {}): TriggerSpec {
  return make("httpOk", z.object({ url: template, status: z.number().int().min(100).max(599) }), {
    url,
    status: options.status ?? 200,
  });
}

/**
 * Fires when a SQL query against a named connection returns at least one row.
 * @example sqlReturnsRows("warehouse", "select 1 from loads where day = '{partition}' and done")
 */
export function sqlReturnsRows(connection: string, sql: string): TriggerSpec {
  return make("sqlReturnsRows", z.object({ connection: z.string().min(1), sql: z.string().min(1) }), {
    connection,
    sql,
  });
}

/**
 * Fires when a partition of a Tributary asset is materialised (default: the partition with the waiting one's key).
 * @example assetMaterialized("sales/orders", { partition: "{partition}" })
 */
export function assetMaterialized(assetKey: string, options: { partition?: string } = {}): TriggerSpec {
  return make("assetMaterialized", z.object({ assetKey: z.string().min(1), partition: template }), {
    assetKey,
    partition: options.partition ?? "{partition}",
  });
}

/** The kinds the functions above make; the triggerer checks them itself. */
/**
 * Codes of trigger errors no later check can cure, because the wait itself is written wrong: the
 * triggerer fails such a trigger (and its step) at once instead of checking again.
 */
export const PERMANENT_TRIGGER_ERRORS: ReadonlySet<string> = new Set([
  "TRIGGER_KIND_UNKNOWN",
  "TRIGGER_ARGS_INVALID",
  "TRIGGER_TEMPLATE_FIELD_MISSING",
  "TRIGGER_TEMPLATE_FIELD_UNKNOWN",
  "TRIGGER_TEMPLATE_INVALID",
]);

export const BUILT_IN_TRIGGER_KINDS: readonly string[] = Object.freeze([
  "at",
  "fileExists",
  "s3ObjectExists",
  "httpOk",
  "sqlReturnsRows",
  "assetMaterialized",
]);

/** What a custom trigger kind's check is given (the triggerer's check context). */
export interface TriggerKindContext {
  /** The partition the trigger waits for; undefined for an unpartitioned asset. */
  readonly partition:
    { readonly key: string; readonly window?: { readonly start: string | Date; readonly end: string | Date } } | undefined;
  /** Aborted when the check times out or the triggerer stops: pass it to I/O. */
  readonly signal: AbortSignal;
  readonly now: Date;
}

/** `{ fired: false }` while the awaited thing is not there; `{ fired: true, payload }` once it is. */
export type TriggerKindResult = { readonly fired: false; readonly detail?: string } | { readonly fired: true; readonly payload: JsonValue };

type ArgsSchema = z.ZodType<Record<string, unknown>, Record<string, unknown>>;

export interface TriggerKindConfig<S extends ArgsSchema> {
  /** The name stored with each trigger; letters, digits, '_', '.' and '-', not a built-in kind. */
  readonly kind: string;
  /** Validates (and may default) the args, when the trigger is made and before every check. Default: any JSON object. */
  readonly args?: S;
  /** Names of string args that are templates (`{partition}`, `{start}`, `{end}`), rendered before `check` sees them. */
  readonly templateArgs?: readonly string[];
  /** Reads, never writes (it may run twice); throws only when it cannot tell. */
  check(args: z.output<S>, context: TriggerKindContext): Promise<TriggerKindResult>;
}

/**
 * A custom trigger kind: call it to make a trigger of that kind. Export it
 * from a definitions module, so the triggerer (which imports the definitions
 * in a child process) can run its check.
 */
export interface TriggerKindDefinition<S extends ArgsSchema = ArgsSchema> extends Branded {
  (args: z.input<S>): TriggerSpec;
  readonly kind: string;
  readonly schema: S;
  readonly templateArgs: readonly string[];
  readonly check: (args: z.output<S>, context: TriggerKindContext) => Promise<TriggerKindResult>;
  readonly definedIn: string | undefined;
}

/** Kinds made by triggerKind() in this JS realm, shared by every copy of the SDK loaded in it; the latest definition wins. */
const REALM_KINDS = Symbol.for("tributary.triggerKinds");
function realmKinds(): Map<string, TriggerKindDefinition> {
  const g = globalThis as Record<symbol, Map<string, TriggerKindDefinition> | undefined>;
  return (g[REALM_KINDS] ??= new Map());
}

const kindName = /^[A-Za-z][A-Za-z0-9_.-]*$/;
const anyJsonObject: ArgsSchema = z.record(z.string(), z.json());

/**
 * Defines a trigger kind of your own.
 *
 * @example
 * import { z } from "zod";
 * export const partnerReady = triggerKind({
 *   kind: "partnerReady",
 *   args: z.object({ url: z.string() }),
 *   templateArgs: ["url"],
 *   async check(args, { signal }) {
 *     const res = await fetch(args.url, { signal });
 *     return res.ok ? { fired: true, payload: await res.json() } : { fired: false };
 *   },
 * });
 * // in an asset: await ctx.defer(partnerReady({ url: "https://partner/{partition}/ready" }))
 */
export function triggerKind<S extends ArgsSchema = ArgsSchema>(config: TriggerKindConfig<S>): TriggerKindDefinition<S> {
  const kind: unknown = config?.kind;
  if (typeof kind !== "string" || !kindName.test(kind)) {
    throw new DefinitionError(
      `triggerKind(): kind ${JSON.stringify(kind)} is not a valid name; use letters, digits, '_', '.' and '-', starting with a letter`,
      { code: "TRIGGER_KIND_INVALID", location: { field: "kind" } },
    );
  }
  if (BUILT_IN_TRIGGER_KINDS.includes(kind)) {
    throw new DefinitionError(`triggerKind(): "${kind}" is a built-in trigger kind; give yours another name`, {
      code: "TRIGGER_KIND_INVALID",
      location: { field: "kind" },
    });
  }
  if (typeof config.check !== "function") {
    throw new DefinitionError(`triggerKind "${kind}": check must be a function returning { fired, payload? }`, {
      code: "TRIGGER_KIND_INVALID",
      location: { field: "check" },
    });
  }
  if (
    config.templateArgs !== undefined &&
    !(Array.isArray(config.templateArgs) && config.templateArgs.every((a) => typeof a === "string"))
  ) {
    throw new DefinitionError(`triggerKind "${kind}": templateArgs must be a list of argument names`, {
      code: "TRIGGER_KIND_INVALID",
      location: { field: "templateArgs" },
    });
  }
  const schema = (config.args ?? anyJsonObject) as S;
  const factory = (args: z.input<S>): TriggerSpec => {
    const parsed = schema.safeParse(args ?? {});
    if (!parsed.success) throw definitionErrorFromZod(`trigger ${kind}()`, parsed.error, { fieldPrefix: "args" });
    const bad = findNonJson(parsed.data, "args");
    if (bad)
      throw new DefinitionError(`trigger ${kind}(): value at ${bad} cannot be stored as JSON`, {
        location: { field: bad.replace(/ \(.*$/, "") },
      });
    return deepFreeze({ kind, args: parsed.data });
  };
  const definition = Object.freeze(
    Object.assign(factory, {
      [DEFINITION_BRAND]: "trigger" as const,
      kind,
      schema,
      templateArgs: Object.freeze([...(config.templateArgs ?? [])]),
      check: config.check,
      definedIn: callerFile(),
    }),
  );
  realmKinds().set(kind, definition as unknown as TriggerKindDefinition);
  return definition;
}

/**
 * Whether `kind` is a built-in trigger kind or one defined with triggerKind() in this process.
 * @example isTriggerKindKnown("fileExists") // true
 */
export function isTriggerKindKnown(kind: string): boolean {
  return BUILT_IN_TRIGGER_KINDS.includes(kind) || realmKinds().has(kind);
}

/**
 * Every kind triggerKind() defined in this process so far, exported or not
 * (a helper module may define kinds that asset files import).
 * @example definedTriggerKinds().map((k) => k.kind)
 */
export function definedTriggerKinds(): TriggerKindDefinition[] {
  return [...realmKinds().values()];
}
