import { z } from "zod";
import { InputError } from "../../errors/index.js";
import { parseDuration } from "../../sdk/index.js";

/** The environment variable naming the alerts config file. */
export const ALERTS_CONFIG_ENV = "TRIBUTARY_ALERTS";

export interface WebhookSinkConfig {
  readonly type: "webhook";
  readonly url: string;
  readonly timeoutMs: number;
  readonly headers: Readonly<Record<string, string>>;
}

export interface LogSinkConfig {
  readonly type: "log";
}

export type SinkConfig = WebhookSinkConfig | LogSinkConfig;

/** Where alerts go: sinks by name, routes by asset owner, and the sinks for everything no route matches. */
export interface AlertsConfig {
  /** Always holds a sink named "log" (the built-in log sink unless the file defines its own). */
  readonly sinks: Readonly<Record<string, SinkConfig>>;
  readonly routes: readonly { readonly owner: string; readonly sinks: readonly string[] }[];
  readonly default: readonly string[];
  readonly delivery: {
    /** Attempts before an alert is given up (status failed). */
    readonly maxAttempts: number;
    /** Delay after the first failed attempt; it doubles with each further one. */
    readonly retryDelayMs: number;
    readonly maxRetryDelayMs: number;
  };
  /** The file it was read from; null for the default. */
  readonly source: string | null;
}

/** With no config file: every alert goes to the log. */
export const DEFAULT_ALERTS_CONFIG: AlertsConfig = Object.freeze({
  sinks: Object.freeze({ log: Object.freeze({ type: "log" as const }) }),
  routes: Object.freeze([]),
  default: Object.freeze(["log"]),
  delivery: Object.freeze({ maxAttempts: 10, retryDelayMs: 10_000, maxRetryDelayMs: 900_000 }),
  source: null,
});

const SINK_NAME = /^[A-Za-z0-9_.:-]+$/;
/** A custom message for a wrong type only; other issues (unknown keys, bad entries) keep their own. */
const typeError = (message: string) => ({
  error: (iss: { code: string }) => (iss.code === "invalid_type" || iss.code === "invalid_union" ? message : undefined),
});
const duration = z.union([z.number().int().min(1), z.string().min(1)], typeError('a duration such as "10s" or milliseconds'));

const webhookSchema = z.strictObject({
  type: z.literal("webhook"),
  url: z
    .string({ error: "the webhook URL is required" })
    .refine((u) => /^https?:\/\/[^\s]+$/.test(u) && URL.canParse(u), "must be an http:// or https:// URL"),
  timeout: duration.optional(),
  headers: z.record(z.string(), z.string(), typeError("an object of header names to string values")).optional(),
});
const logSchema = z.strictObject({ type: z.literal("log") });

const fileSchema = z.strictObject(
  {
    sinks: z
      .record(
        z.string().regex(SINK_NAME, "sink names are letters, digits, '_', '.', ':' and '-'"),
        z.discriminatedUnion("type", [webhookSchema, logSchema], { error: 'a sink needs "type": "webhook" or "log"' }),
        typeError("an object of sink names to sinks"),
      )
      .default({}),
    routes: z
      .array(
        z.strictObject({
          owner: z.string({ error: 'the owner the route matches is required, e.g. "team:sales"' }).min(1),
          sinks: z.array(z.string(), typeError("a list of sink names")).min(1, "name at least one sink"),
        }),
        typeError("a list of { owner, sinks } routes"),
      )
      .default([]),
    default: z.array(z.string(), typeError("a list of sink names")).default(["log"]),
    delivery: z
      .strictObject({
        maxAttempts: z.number().int().min(1).max(100).optional(),
        retryDelay: duration.optional(),
        maxRetryDelay: duration.optional(),
      })
      .optional(),
  },
  typeError('the config must be a JSON object { "sinks": …, "routes": […], "default": […] }'),
);

/**
 * Validates an alerts config file's text. Every problem is an InputError
 * (code ALERTS_CONFIG_INVALID) naming the file and the field.
 *
 * @example
 * parseAlertsConfig('{ "sinks": { "slack": { "type": "webhook", "url": "https://hooks.slack.com/…" } },' +
 *   ' "routes": [{ "owner": "team:sales", "sinks": ["slack"] }] }', "/etc/tributary/alerts.json");
 */
export function parseAlertsConfig(text: string, file: string): AlertsConfig {
  const fail = (field: string | null, message: string, cause?: unknown): never => {
    throw new InputError(`alerts config ${file} (${ALERTS_CONFIG_ENV}): ${field ? `field "${field}": ` : ""}${message}`, {
      code: "ALERTS_CONFIG_INVALID",
      location: { file, ...(field ? { field } : {}) },
      ...(cause === undefined ? {} : { cause }),
    });
  };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return fail(null, `not valid JSON: ${(err as Error).message}`, err);
  }
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    if (issue.code === "unrecognized_keys") {
      const [key] = issue.keys;
      return fail(fieldPath([...issue.path, key!]), `unknown field; check its spelling (see docs/alerts.md for the fields)`);
    }
    const message = issue.code === "invalid_key" ? (issue.issues[0]?.message ?? issue.message) : issue.message;
    return fail(issue.path.length > 0 ? fieldPath(issue.path) : null, message);
  }
  const c = parsed.data;
  const sinks: Record<string, SinkConfig> = { log: { type: "log" } };
  for (const [name, s] of Object.entries(c.sinks)) {
    sinks[name] =
      s.type === "log"
        ? { type: "log" }
        : {
            type: "webhook",
            url: s.url,
            timeoutMs: s.timeout === undefined ? 10_000 : durationAt(s.timeout, `sinks.${name}.timeout`, fail),
            headers: s.headers ?? {},
          };
  }
  const known = (names: readonly string[], field: string): void => {
    names.forEach((n, i) => {
      if (!(n in sinks))
        fail(
          `${field}[${i}]`,
          `unknown sink "${n}"; the sinks are ${Object.keys(sinks)
            .map((k) => `"${k}"`)
            .join(", ")}`,
        );
    });
  };
  c.routes.forEach((r, i) => known(r.sinks, `routes[${i}].sinks`));
  known(c.default, "default");
  const d = c.delivery ?? {};
  const delivery = {
    maxAttempts: d.maxAttempts ?? DEFAULT_ALERTS_CONFIG.delivery.maxAttempts,
    retryDelayMs:
      d.retryDelay === undefined ? DEFAULT_ALERTS_CONFIG.delivery.retryDelayMs : durationAt(d.retryDelay, "delivery.retryDelay", fail),
    maxRetryDelayMs:
      d.maxRetryDelay === undefined
        ? DEFAULT_ALERTS_CONFIG.delivery.maxRetryDelayMs
        : durationAt(d.maxRetryDelay, "delivery.maxRetryDelay", fail),
  };
  return {
    sinks,
    routes: c.routes.map((r) => ({ owner: r.owner, sinks: [...new Set(r.sinks)] })),
    default: [...new Set(c.default)],
    delivery,
    source: file,
  };
}

function durationAt(value: string | number, field: string, fail: (field: string, message: string) => never): number {
  try {
    const ms = parseDuration(value, field);
    if (ms <= 0) fail(field, "must be positive");
    return ms;
  } catch (err) {
    if (err instanceof InputError) throw err;
    return fail(field, `${JSON.stringify(value)} is not a duration; write "10s", "5m" or a number of milliseconds`);
  }
}

/** `routes[0].sinks[1]` from a zod issue path. */
function fieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const p of path) out += typeof p === "number" ? `[${p}]` : `${out === "" ? "" : "."}${String(p)}`;
  return out;
}
