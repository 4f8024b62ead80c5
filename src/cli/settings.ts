import { readFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { InputError } from "../errors/index.js";
import {
  ALERTS_CONFIG_ENV,
  DEFAULT_ALERTS_CONFIG,
  parseAlertsConfig,
  parseOpenLineageConfig,
  type AlertsConfig,
  type OpenLineageConfig,
} from "../reconciler/config/index.js";
import { DEFAULT_INFRASTRUCTURE_RETRY_POLICY, type InfrastructureRetryPolicy } from "../planner/index.js";
import { parseDuration } from "../sdk/index.js";
import { DEFAULT_SERVER_URL } from "./server-identity.js";
// Type only: the storage module (pg, kysely, the AWS SDK) would slow every command's start.
import type { S3OutputStoreSettings } from "../storage/index.js";

/** Options every command accepts, plus the environment. */
export interface GlobalOptions {
  definitions?: string;
  dataDir?: string;
  loadTimeout?: string;
  url?: string;
}

export interface Settings {
  definitionsDir: string;
  dataDir: string;
  loadTimeoutMs: number;
  /** Postgres instead of the embedded database, from DATABASE_URL. */
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  /** Key prefix of the BullMQ queues in Redis (TRIBUTARY_REDIS_PREFIX, default "tributary"). */
  redisPrefix: string | undefined;
  /**
   * The embedded database's buffer pool (TRIBUTARY_EMBEDDED_SHARED_BUFFERS, e.g. `64MB`); default 32MB for servers
   * (`dev`) and 16MB for commands that answer and exit. PGlite zeroes the whole pool as it starts: a small one starts
   * faster, a large one keeps more of a large project's pages in memory.
   */
  embeddedSharedBuffers: string | undefined;
  /** Where a running server is asked first by operational commands. */
  serverUrl: string;
  /**
   * What was named explicitly, by a flag or (for the database and the server) the environment: such a choice means
   * "this project", so a server that serves another is not asked.
   */
  explicit: {
    definitions: boolean;
    dataDir: boolean;
    databaseUrl: boolean;
    /** Where the server URL came from, when not the default. */
    serverUrl: "--url" | "TRIBUTARY_URL" | undefined;
  };
  /** Large-output directory (TRIBUTARY_OUTPUT_DIR); embedded mode defaults to <data-dir>/outputs. */
  outputDir: string | undefined;
  /** Large outputs in S3 or an S3-compatible server instead (TRIBUTARY_S3_*); absent unless TRIBUTARY_S3_BUCKET is set. */
  s3?: S3OutputStoreSettings;
  /** Step logs (TRIBUTARY_LOGS_DIR); default <data-dir>/logs. */
  logsDir: string | undefined;
  /** Alert sinks and routes, from the JSON file TRIBUTARY_ALERTS names; default: all alerts to the log. */
  alerts: AlertsConfig;
  // OpenLineage: TRIBUTARY_OPENLINEAGE_URL or _FILE (+ _NAMESPACE); absent when neither is set.
  openLineage?: OpenLineageConfig;
  /** Browser safety and request limits of the HTTP server (docs/security.md). */
  http: HttpSettings;
  /** Sign-in through an OpenID Connect provider (TRIBUTARY_OIDC_*); absent unless TRIBUTARY_OIDC_ISSUER is set. */
  oidc?: OidcSettings;
  /**
   * Re-runs of a step after infrastructure failures, which never count against the asset's `retries`:
   * TRIBUTARY_INFRASTRUCTURE_RETRIES (default 5), TRIBUTARY_INFRASTRUCTURE_RETRY_DELAY (the first one's delay,
   * default 2s; it grows exponentially, jittered) and TRIBUTARY_INFRASTRUCTURE_RETRY_MAX_DELAY (default 1m).
   */
  infrastructureRetry: InfrastructureRetryPolicy;
  /**
   * TRIBUTARY_OUTPUT_RETENTION (e.g. `30d`): outputs older than this are deleted by the reconcilers, objects too,
   * except what the latest materialisation of each partition wrote and what unfinished runs wrote. Unset: kept.
   */
  outputRetentionMs: number | undefined;
  /**
   * TRIBUTARY_LOG_RETENTION (e.g. `14d`): the log files of tries that ended longer ago than this are deleted by the
   * reconcilers (an asset's `retention.logs` overrides it). Unset: kept.
   */
  logRetentionMs: number | undefined;
  /**
   * TRIBUTARY_HISTORY_RETENTION (e.g. `90d`): runs that ended longer ago than this, with their steps, tries, events,
   * lineage rows, check results and logs, are archived to the output store by the reconcilers, then deleted (an asset's
   * `retention.history` overrides it), except what a partition's latest state needs. Unset: kept.
   */
  historyRetentionMs: number | undefined;
}

export interface HttpSettings {
  /** TRIBUTARY_PUBLIC_HOSTS: host names clients reach the server by (host or host:port), besides loopback and the listen host. */
  publicHosts: readonly string[];
  /** TRIBUTARY_CORS_ORIGINS: origins whose pages may call the API; none by default (no CORS headers). */
  corsOrigins: readonly string[];
  /** TRIBUTARY_TRUST_PROXY: believe X-Forwarded-Proto and X-Forwarded-For. */
  trustProxy: boolean;
  /**
   * TRIBUTARY_MUTATIONS_PER_MINUTE and TRIBUTARY_MUTATION_BURST (default 60 and 30 per token or signed-in user);
   * null: unlimited (0 a minute). Without access control there is no token to count by: unlimited unless set.
   */
  mutationRate: { perMinute: number; burst: number } | null;
  /** Whether TRIBUTARY_MUTATIONS_PER_MINUTE was set. */
  mutationRateSet: boolean;
}

/** `host`, `host:port`, `[ipv6]` or `[ipv6]:port`; a port from 1 to 65535. */
const HOST_NAME = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*\.?|\[[0-9a-f:.]+\])(?::(?:[1-9]\d{0,4}))?$/;

const commaList = (what: string, check: (item: string) => string | undefined) =>
  z.string().transform((value, ctx) => {
    const items = value
      .split(",")
      .map((item) => item.trim())
      .filter((item) => item !== "");
    for (const item of items) {
      const problem = check(item);
      if (problem) {
        ctx.addIssue({ code: "custom", message: `"${item}" ${problem}; write comma-separated ${what}` });
        return z.NEVER;
      }
    }
    return items;
  });

const publicHosts = commaList("host names, e.g. tributary.example.com,tributary-api:3000", (item) => {
  const host = item.toLowerCase();
  if (!HOST_NAME.test(host) || (/:(\d+)$/.test(host) && Number(/:(\d+)$/.exec(host)![1]) > 65535)) {
    return "is not a host name or host:port (no scheme, no path; IPv6 addresses in brackets)";
  }
  return undefined;
});

const corsOrigins = commaList("origins, e.g. https://app.example.com,http://localhost:5173", (item) => {
  if (item === "*") return "is not allowed: CORS with credentials needs each origin listed";
  let url: URL;
  try {
    url = new URL(item);
  } catch {
    return "is not an origin (scheme://host[:port])";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "is not an http:// or https:// origin";
  if (url.origin !== item.replace(/\/$/, "").toLowerCase() || url.username || url.search || url.hash) {
    return `is not an origin: write it as a browser sends it, ${url.origin} (scheme://host[:port], lower case, no path)`;
  }
  return undefined;
});

const count = (min: number) =>
  z
    .string()
    .regex(/^\d+$/, "must be a whole number")
    .transform(Number)
    .refine((n) => n >= min && n <= 1_000_000, `must be between ${min} and 1000000`);

/** A duration as an environment variable gives it: `90s`, `5m`, `250ms`, or a number of milliseconds; at most a day. */
const envDuration = (example: string) =>
  z.string().transform((value, ctx) => {
    const text = value.trim();
    let ms: number;
    try {
      ms = parseDuration(/^\d+$/.test(text) ? Number(text) : text, "");
    } catch {
      ctx.addIssue({ code: "custom", message: `"${value}" is not a duration; write e.g. ${example}, or a number of milliseconds` });
      return z.NEVER;
    }
    if (ms > 86_400_000) {
      ctx.addIssue({ code: "custom", message: `"${value}" is more than a day (1d)` });
      return z.NEVER;
    }
    return ms;
  });

/** How long outputs are kept: at least an hour, at most ten years. */
const envRetention = z.string().transform((value, ctx) => {
  const text = value.trim();
  let ms: number;
  try {
    ms = parseDuration(text, "");
  } catch {
    ctx.addIssue({ code: "custom", message: `"${value}" is not a duration; write e.g. 30d or 12h` });
    return z.NEVER;
  }
  if (ms < 3_600_000 || ms > 3_650 * 86_400_000) {
    ctx.addIssue({ code: "custom", message: `"${value}" must be between 1h and 3650d` });
    return z.NEVER;
  }
  return ms;
});

/** An OpenID Connect provider users sign in with (the authorization code flow). */
export interface OidcSettings {
  /** The provider's issuer URL; its discovery document is at <issuer>/.well-known/openid-configuration. */
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Where the provider sends the browser back; default: the server's own origin + /auth/oidc/callback. */
  readonly redirectUrl: string | undefined;
  /** The sign-in button's text: "Sign in with <label>". */
  readonly label: string;
}

const OIDC_CALLBACK_PATH = "/auth/oidc/callback";
const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;

// An http:// provider or callback only on this machine (a test or a local provider): elsewhere codes and tokens
// would cross the network in the clear.
const oidcUrl = (what: string) =>
  z
    .url({ protocol: /^https?$/, error: `must be an https:// URL ${what}` })
    .refine((u) => !URL.canParse(u) || u.startsWith("https:") || LOOPBACK.test(new URL(u).hostname), {
      error: `must be an https:// URL ${what} (http:// only on localhost)`,
    });

const oidcSchema = z.object({
  TRIBUTARY_OIDC_ISSUER: oidcUrl("(the provider's issuer, e.g. https://login.example.com/realms/data)"),
  TRIBUTARY_OIDC_CLIENT_ID: z.string({ error: "is required with TRIBUTARY_OIDC_ISSUER" }).min(1).max(500),
  TRIBUTARY_OIDC_CLIENT_SECRET: z.string({ error: "is required with TRIBUTARY_OIDC_ISSUER" }).min(1).max(2000),
  TRIBUTARY_OIDC_REDIRECT_URL: oidcUrl(`ending in ${OIDC_CALLBACK_PATH}, e.g. https://tributary.example.com${OIDC_CALLBACK_PATH}`)
    .refine((u) => !URL.canParse(u) || new URL(u).pathname === OIDC_CALLBACK_PATH, { error: `must end in ${OIDC_CALLBACK_PATH}` })
    .optional(),
  TRIBUTARY_OIDC_LABEL: z.string().trim().min(1).max(60, "must be at most 60 characters").default("single sign-on"),
});

const envSchema = z.object({
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// or postgresql:// URL")
    .optional(),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, "must be a redis:// URL")
    .optional(),
  TRIBUTARY_REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,100}$/, "must be letters, digits, '_', '.' or '-'")
    .optional(),
  TRIBUTARY_URL: z.string().url().optional(),
  TRIBUTARY_EMBEDDED_SHARED_BUFFERS: z
    .string()
    .regex(/^\d+(?:kB|MB|GB)$/, "must be a size in kB, MB or GB, e.g. 64MB")
    .refine((v) => {
      const size = /^(\d+)(kB|MB|GB)$/.exec(v);
      if (!size) return true; // the regex says what is wrong
      const kb = Number(size[1]) * { kB: 1, MB: 1024, GB: 1024 * 1024 }[size[2] as "kB" | "MB" | "GB"];
      return kb >= 1024 && kb <= 1024 * 1024;
    }, "must be between 1MB and 1GB")
    .optional(),
  TRIBUTARY_OUTPUT_DIR: z.string().min(1).optional(),
  TRIBUTARY_LOGS_DIR: z.string().min(1).optional(),
  TRIBUTARY_S3_ENDPOINT: z
    .url({ protocol: /^https?$/, error: "must be an http:// or https:// URL, e.g. http://127.0.0.1:9000" })
    .optional(),
  TRIBUTARY_S3_FORCE_PATH_STYLE: z.enum(["true", "false"], { error: 'must be "true" or "false"' }).optional(),
  TRIBUTARY_PUBLIC_HOSTS: publicHosts.optional(),
  TRIBUTARY_CORS_ORIGINS: corsOrigins.optional(),
  TRIBUTARY_TRUST_PROXY: z.enum(["true", "false"], { error: 'must be "true" or "false"' }).optional(),
  TRIBUTARY_MUTATIONS_PER_MINUTE: count(0).optional(),
  TRIBUTARY_MUTATION_BURST: count(1).optional(),
  TRIBUTARY_INFRASTRUCTURE_RETRIES: z
    .string()
    .regex(/^\d+$/, "must be a whole number (re-runs of a step after infrastructure failures; 0: none)")
    .transform(Number)
    .refine((n) => n <= 1000, "must be at most 1000")
    .optional(),
  TRIBUTARY_INFRASTRUCTURE_RETRY_DELAY: envDuration("2s").optional(),
  TRIBUTARY_INFRASTRUCTURE_RETRY_MAX_DELAY: envDuration("1m").optional(),
  TRIBUTARY_OUTPUT_RETENTION: envRetention.optional(),
  TRIBUTARY_LOG_RETENTION: envRetention.optional(),
  TRIBUTARY_HISTORY_RETENTION: envRetention.optional(),
});

export function resolveSettings(options: GlobalOptions, env: NodeJS.ProcessEnv = process.env): Settings {
  const parsedEnv = envSchema.safeParse({
    DATABASE_URL: env.DATABASE_URL || undefined,
    REDIS_URL: env.REDIS_URL || undefined,
    TRIBUTARY_REDIS_PREFIX: env.TRIBUTARY_REDIS_PREFIX || undefined,
    TRIBUTARY_URL: env.TRIBUTARY_URL || undefined,
    TRIBUTARY_EMBEDDED_SHARED_BUFFERS: env.TRIBUTARY_EMBEDDED_SHARED_BUFFERS || undefined,
    TRIBUTARY_OUTPUT_DIR: env.TRIBUTARY_OUTPUT_DIR || undefined,
    TRIBUTARY_LOGS_DIR: env.TRIBUTARY_LOGS_DIR || undefined,
    TRIBUTARY_S3_ENDPOINT: env.TRIBUTARY_S3_ENDPOINT || undefined,
    TRIBUTARY_S3_FORCE_PATH_STYLE: env.TRIBUTARY_S3_FORCE_PATH_STYLE || undefined,
    TRIBUTARY_PUBLIC_HOSTS: env.TRIBUTARY_PUBLIC_HOSTS || undefined,
    TRIBUTARY_CORS_ORIGINS: env.TRIBUTARY_CORS_ORIGINS || undefined,
    TRIBUTARY_TRUST_PROXY: env.TRIBUTARY_TRUST_PROXY || undefined,
    TRIBUTARY_MUTATIONS_PER_MINUTE: env.TRIBUTARY_MUTATIONS_PER_MINUTE || undefined,
    TRIBUTARY_MUTATION_BURST: env.TRIBUTARY_MUTATION_BURST || undefined,
    TRIBUTARY_INFRASTRUCTURE_RETRIES: env.TRIBUTARY_INFRASTRUCTURE_RETRIES || undefined,
    TRIBUTARY_INFRASTRUCTURE_RETRY_DELAY: env.TRIBUTARY_INFRASTRUCTURE_RETRY_DELAY || undefined,
    TRIBUTARY_INFRASTRUCTURE_RETRY_MAX_DELAY: env.TRIBUTARY_INFRASTRUCTURE_RETRY_MAX_DELAY || undefined,
    TRIBUTARY_OUTPUT_RETENTION: env.TRIBUTARY_OUTPUT_RETENTION || undefined,
    TRIBUTARY_LOG_RETENTION: env.TRIBUTARY_LOG_RETENTION || undefined,
    TRIBUTARY_HISTORY_RETENTION: env.TRIBUTARY_HISTORY_RETENTION || undefined,
  });
  if (!parsedEnv.success) {
    const issue = parsedEnv.error.issues[0];
    throw new InputError(`environment variable ${String(issue?.path[0])}: ${issue?.message}`);
  }
  let loadTimeoutMs = 60_000;
  if (options.loadTimeout !== undefined) {
    const raw = /^\d+$/.test(options.loadTimeout) ? Number(options.loadTimeout) : options.loadTimeout;
    try {
      loadTimeoutMs = parseDuration(raw, "--load-timeout");
    } catch (cause) {
      throw new InputError(`--load-timeout: "${options.loadTimeout}" is not a duration; write e.g. 5s, 2m or 5000`, { cause });
    }
    if (loadTimeoutMs <= 0) throw new InputError("--load-timeout must be positive");
  }
  return {
    definitionsDir: path.resolve(options.definitions ?? "asset-definitions"),
    dataDir: path.resolve(options.dataDir ?? ".tributary"),
    loadTimeoutMs,
    databaseUrl: parsedEnv.data.DATABASE_URL,
    redisUrl: parsedEnv.data.REDIS_URL,
    redisPrefix: parsedEnv.data.TRIBUTARY_REDIS_PREFIX,
    embeddedSharedBuffers: parsedEnv.data.TRIBUTARY_EMBEDDED_SHARED_BUFFERS,
    serverUrl: options.url ?? parsedEnv.data.TRIBUTARY_URL ?? DEFAULT_SERVER_URL,
    explicit: {
      definitions: options.definitions !== undefined,
      dataDir: options.dataDir !== undefined,
      databaseUrl: parsedEnv.data.DATABASE_URL !== undefined,
      serverUrl: options.url !== undefined ? "--url" : parsedEnv.data.TRIBUTARY_URL !== undefined ? "TRIBUTARY_URL" : undefined,
    },
    outputDir: parsedEnv.data.TRIBUTARY_OUTPUT_DIR ? path.resolve(parsedEnv.data.TRIBUTARY_OUTPUT_DIR) : undefined,
    logsDir: parsedEnv.data.TRIBUTARY_LOGS_DIR ? path.resolve(parsedEnv.data.TRIBUTARY_LOGS_DIR) : undefined,
    alerts: readAlertsConfig(env[ALERTS_CONFIG_ENV]),
    http: {
      publicHosts: (parsedEnv.data.TRIBUTARY_PUBLIC_HOSTS ?? []).map((h) => h.toLowerCase()),
      corsOrigins: parsedEnv.data.TRIBUTARY_CORS_ORIGINS?.map((o) => new URL(o).origin) ?? [],
      trustProxy: parsedEnv.data.TRIBUTARY_TRUST_PROXY === "true",
      // Unset: the API's defaults (DEFAULT_MUTATION_RATE).
      mutationRate:
        parsedEnv.data.TRIBUTARY_MUTATIONS_PER_MINUTE === 0
          ? null
          : { perMinute: parsedEnv.data.TRIBUTARY_MUTATIONS_PER_MINUTE ?? 60, burst: parsedEnv.data.TRIBUTARY_MUTATION_BURST ?? 30 },
      mutationRateSet: parsedEnv.data.TRIBUTARY_MUTATIONS_PER_MINUTE !== undefined,
    },
    infrastructureRetry: infrastructureRetry(parsedEnv.data),
    outputRetentionMs: parsedEnv.data.TRIBUTARY_OUTPUT_RETENTION,
    logRetentionMs: parsedEnv.data.TRIBUTARY_LOG_RETENTION,
    historyRetentionMs: parsedEnv.data.TRIBUTARY_HISTORY_RETENTION,
    ...optionalOpenLineage(env),
    ...optionalS3(env, parsedEnv.data.TRIBUTARY_S3_FORCE_PATH_STYLE),
    ...optionalOidc(env),
  };
}

/** The infrastructure retry budget; a cap below the first delay names both variables. */
function infrastructureRetry(env: {
  TRIBUTARY_INFRASTRUCTURE_RETRIES?: number | undefined;
  TRIBUTARY_INFRASTRUCTURE_RETRY_DELAY?: number | undefined;
  TRIBUTARY_INFRASTRUCTURE_RETRY_MAX_DELAY?: number | undefined;
}): InfrastructureRetryPolicy {
  const d = DEFAULT_INFRASTRUCTURE_RETRY_POLICY;
  const policy = {
    max: env.TRIBUTARY_INFRASTRUCTURE_RETRIES ?? d.max,
    delayMs: env.TRIBUTARY_INFRASTRUCTURE_RETRY_DELAY ?? d.delayMs,
    maxDelayMs: env.TRIBUTARY_INFRASTRUCTURE_RETRY_MAX_DELAY ?? d.maxDelayMs,
  };
  if (policy.maxDelayMs < policy.delayMs) {
    const given = (set: boolean) => (set ? "" : ", the default");
    throw new InputError(
      `environment variable TRIBUTARY_INFRASTRUCTURE_RETRY_MAX_DELAY (${policy.maxDelayMs} ms${given(env.TRIBUTARY_INFRASTRUCTURE_RETRY_MAX_DELAY !== undefined)}) ` +
        `is shorter than TRIBUTARY_INFRASTRUCTURE_RETRY_DELAY (${policy.delayMs} ms${given(env.TRIBUTARY_INFRASTRUCTURE_RETRY_DELAY !== undefined)}): ` +
        `the cap on the delay must be at least the first delay`,
    );
  }
  return policy;
}

// OIDC sign-in: every setting is checked at startup, naming the variable.
function optionalOidc(env: NodeJS.ProcessEnv): { oidc?: OidcSettings } {
  const names = Object.keys(oidcSchema.shape) as (keyof typeof oidcSchema.shape)[];
  if (!env.TRIBUTARY_OIDC_ISSUER) {
    const stray = names.find((name) => env[name]);
    if (stray) {
      throw new InputError(
        `environment variable ${stray} is set but TRIBUTARY_OIDC_ISSUER is not: set the issuer to offer sign-in with an OpenID Connect provider, or unset ${stray}`,
      );
    }
    return {};
  }
  const parsed = oidcSchema.safeParse(Object.fromEntries(names.map((name) => [name, env[name] || undefined])));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new InputError(`environment variable ${String(issue?.path[0])}: ${issue?.message}`);
  }
  const o = parsed.data;
  return {
    oidc: {
      issuer: o.TRIBUTARY_OIDC_ISSUER,
      clientId: o.TRIBUTARY_OIDC_CLIENT_ID,
      clientSecret: o.TRIBUTARY_OIDC_CLIENT_SECRET,
      redirectUrl: o.TRIBUTARY_OIDC_REDIRECT_URL,
      label: o.TRIBUTARY_OIDC_LABEL,
    },
  };
}

// The S3 output store: the rest of its settings (the bucket name's rules, a key without its secret) are checked
// when the store is built, naming the setting.
function optionalS3(env: NodeJS.ProcessEnv, forcePathStyle: "true" | "false" | undefined): { s3?: S3OutputStoreSettings } {
  if (!env.TRIBUTARY_S3_BUCKET) {
    const stray = ["TRIBUTARY_S3_ENDPOINT", "TRIBUTARY_S3_REGION", "TRIBUTARY_S3_PREFIX", "TRIBUTARY_S3_FORCE_PATH_STYLE"].find(
      (name) => env[name],
    );
    if (stray) {
      throw new InputError(
        `environment variable ${stray} is set but TRIBUTARY_S3_BUCKET is not: set the bucket to keep large outputs in S3, or unset ${stray}`,
      );
    }
    return {};
  }
  return {
    s3: {
      bucket: env.TRIBUTARY_S3_BUCKET,
      endpoint: env.TRIBUTARY_S3_ENDPOINT || undefined,
      region: env.TRIBUTARY_S3_REGION || env.AWS_REGION || undefined,
      prefix: env.TRIBUTARY_S3_PREFIX || undefined,
      forcePathStyle: forcePathStyle === undefined ? undefined : forcePathStyle === "true",
      // Absent: the SDK's default credential chain (shared config, SSO, instance and container roles).
      accessKeyId: env.AWS_ACCESS_KEY_ID || undefined,
      secretAccessKey: env.AWS_SECRET_ACCESS_KEY || undefined,
      sessionToken: env.AWS_SESSION_TOKEN || undefined,
    },
  };
}

// OpenLineage: a bad URL or an unwritable file stops startup naming the variable.
function optionalOpenLineage(env: NodeJS.ProcessEnv): { openLineage?: OpenLineageConfig } {
  const openLineage = parseOpenLineageConfig(env);
  return openLineage ? { openLineage } : {};
}

/** The alerts config file named by TRIBUTARY_ALERTS; a bad one stops startup with the file and field. */
function readAlertsConfig(file: string | undefined): AlertsConfig {
  if (!file) return DEFAULT_ALERTS_CONFIG;
  const resolved = path.resolve(file);
  let text: string;
  try {
    text = readFileSync(resolved, "utf8");
  } catch (cause) {
    throw new InputError(
      `alerts config ${resolved} (${ALERTS_CONFIG_ENV}): cannot be read: ${(cause as Error).message}; ` +
        `point ${ALERTS_CONFIG_ENV} at a JSON file, or unset it to send alerts to the log`,
      { code: "ALERTS_CONFIG_INVALID", location: { file: resolved }, cause },
    );
  }
  return parseAlertsConfig(text, resolved);
}
