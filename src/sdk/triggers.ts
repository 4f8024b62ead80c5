import { z } from "zod";
import { deepFreeze } from "./json.js";
import { parseDuration, type Duration } from "./duration.js";
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

/** Fires at an instant (ISO string or Date). */
export function at(instant: string | Date): TriggerSpec {
  const iso = instant instanceof Date ? instant.toISOString() : instant;
  return make("at", z.object({ at: z.iso.datetime({ offset: true }) }), { at: iso });
}

/** Fires when a file exists. @example fileExists("/data/in/{partition}.csv") */
export function fileExists(path: string): TriggerSpec {
  return make("fileExists", z.object({ path: template }), { path });
}

/** Fires when an S3 object exists. */
export function s3ObjectExists(bucket: string, key: string): TriggerSpec {
  return make("s3ObjectExists", z.object({ bucket: z.string().min(1), key: template }), { bucket, key });
}

/** Fires when the URL answers with the expected status (default 200). */
export function httpOk(url: string, options: { status?: number } = {}): TriggerSpec {
  return make("httpOk", z.object({ url: template, status: z.number().int().min(100).max(599) }), {
    url,
    status: options.status ?? 200,
  });
}

/** Fires when a SQL query against a named connection returns at least one row. */
export function sqlReturnsRows(connection: string, sql: string): TriggerSpec {
  return make("sqlReturnsRows", z.object({ connection: z.string().min(1), sql: z.string().min(1) }), {
    connection,
    sql,
  });
}

/** Fires when a partition of a Tributary asset is materialised. */
export function assetMaterialized(assetKey: string, options: { partition?: string } = {}): TriggerSpec {
  return make("assetMaterialized", z.object({ assetKey: z.string().min(1), partition: template }), {
    assetKey,
    partition: options.partition ?? "{partition}",
  });
}

export interface DeferOptions {
  timeout?: Duration;
}

export function deferTimeoutMs(options: DeferOptions): number | null {
  return options.timeout === undefined ? null : parseDuration(options.timeout, "timeout");
}
