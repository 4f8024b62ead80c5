import { Hono, type Context } from "hono";
import type { z } from "zod";
import type { AssetGraph } from "../../graph/index.js";
import type { ExecutionBackend, InputsRequest, StepOutcome } from "../../execution/index.js";
import { partitionInfo } from "../../partitions/index.js";
import type { GraphCache, OutputStore, TokenCheck, TokenTry, TryTokenStore } from "../../storage/index.js";
import { tryLogFile } from "../logs/log-file.js";
import { badRequest, batchBody, ExecutionApiError, jsonBody, keyOf, limit, parse, type BatchTry } from "./execution-requests.js";
import {
  batchFinishBody,
  batchStartBody,
  batchTriesBody,
  deferBody,
  dynamicPartitionsBody,
  finishBody,
  logsQuery,
  materializedQuery,
  startBody,
  type BatchItemResult,
} from "./execution-schemas.js";
import { appendShippedChunk, readShippedLog } from "./shipped-log.js";

/** Largest finish (or defer) body: an inline output plus the report. */
export const MAX_FINISH_BODY_BYTES = 16 * 1024 * 1024;
/** Largest log chunk a worker may POST at once. */
export const MAX_LOG_CHUNK_BYTES = 1024 * 1024;
/** Largest body of the other calls. */
const MAX_SMALL_BODY_BYTES = 1024 * 1024;
/** Largest `POST /batch/finish` body: up to 1 000 reports, a few with large inline outputs. */
export const MAX_BATCH_FINISH_BODY_BYTES = 64 * 1024 * 1024;
/** Largest body of the other batch calls (1 000 start reports fit with room to spare). */
export const MAX_BATCH_BODY_BYTES = 4 * 1024 * 1024;
/** Logs of a batch finish copied to the object store at once. */
const ARCHIVE_CONCURRENCY = 16;

/** What the execution API needs. */
export interface ExecutionApiServices {
  readonly tokens: TryTokenStore;
  /** The API process's StoreExecutionBackend (one instance, no `followUp`): results are recorded exactly as a local executor's. */
  readonly backend: ExecutionBackend;
  readonly graphs: Pick<GraphCache, "current">;
  /** Where shipped logs are written: the live-log routes read them there (`<logsDir>/<run>/<step>-<try>.log`). */
  readonly logsDir: string;
  /** Where a try's complete log is copied when it ends (`logs/<run>/<step>-<try>.log`); null: the file only. */
  readonly outputStore: OutputStore | null;
  /** How far each start or heartbeat moves a token's expiry (default: the token store's TTL). */
  readonly tokenTtlMs?: number;
  readonly clock?: () => Date;
}

const TRY_PATH = "/tries/:stepId/:tryNumber";

/**
 * The execution API workers report through (docs/execution-api.md): every
 * `/tries/…` route is scoped to one step try by its path and needs that try's
 * bearer token; the `/batch/…` routes carry many tries, each with its own
 * token, checked and answered per item, and record the accepted ones in one
 * backend call. Mount at `/execution/v1`. Errors are JSON `{ error: { code, message } }`.
 *
 * @example
 * import type { Hono } from "hono";
 * import type { ExecutionBackend } from "../../execution/index.js";
 * import type { GraphCache, OutputStore, TryTokenStore } from "../../storage/index.js";
 * // given app: Hono, tokens: TryTokenStore, backend: ExecutionBackend, graphs: GraphCache, logsDir: string, outputStore: OutputStore | null
 * app.route("/execution/v1", executionRoutes({ tokens, backend, graphs, logsDir, outputStore }));
 */
export function executionRoutes(services: ExecutionApiServices): Hono {
  const clock = services.clock ?? (() => new Date());
  /** Tries whose inputs this process read: the backend holds their lineage until finish (see rehydrate). */
  const loaded = new Set<string>();
  const app = new Hono();
  app.onError((err, c) => {
    if (err instanceof ExecutionApiError) {
      if (err.status === 401) c.header("WWW-Authenticate", 'Bearer realm="tributary-execution"');
      return c.json({ error: { code: err.code, message: err.message } }, err.status);
    }
    process.stderr.write(`tributary: /execution/v1 ${c.req.method} ${new URL(c.req.url).pathname} failed: ${err.stack ?? err.message}\n`);
    return c.json({ error: { code: "INTERNAL", message: "the request failed on the server; its log has the details" } }, 500);
  });

  /** The try the path names, once the bearer token proves it is that try's and the try is still active. */
  const authorize = async (c: Context): Promise<TokenTry> => {
    const stepParam = c.req.param("stepId") ?? "";
    const tryParam = c.req.param("tryNumber") ?? "";
    if (!/^[1-9]\d{0,14}$/.test(stepParam)) throw badRequest(`path.stepId: ${JSON.stringify(stepParam)} is not a step id`);
    if (!/^[1-9]\d{0,8}$/.test(tryParam))
      throw badRequest(`path.tryNumber: ${JSON.stringify(tryParam)} is not a try number (a whole number from 1)`);
    const header = c.req.header("authorization") ?? "";
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (!match) throw tokenMissing();
    const verdict = verdictOf(await services.tokens.authenticate(match[1]!, clock()), Number(stepParam), Number(tryParam));
    if (verdict instanceof ExecutionApiError) throw verdict;
    return verdict;
  };

  const dispatchOf = async (t: TokenTry): Promise<InputsRequest> => {
    const { graph } = await services.graphs.current();
    return tryDispatch(graph, t, logFileOf(t));
  };

  const logFileOf = (t: TokenTry): string => {
    const file = tryLogFile(services.logsDir, { runId: t.runId, id: t.stepId }, { tryNumber: t.tryNumber, logRef: null });
    // The layout never leaves logsDir; a guard, since a path outside it is never read back.
    if (!file) throw new Error(`the log of try ${t.tryNumber} of step ${t.stepId} falls outside ${services.logsDir}`);
    return file;
  };

  const extend = (t: TokenTry) =>
    services.tokens.extend(t.stepId, t.tryNumber, clock(), ...(services.tokenTtlMs === undefined ? [] : [services.tokenTtlMs]));

  app.get(`${TRY_PATH}/inputs`, async (c) => {
    const t = await authorize(c);
    // Read from the database for the try the token names: a worker cannot ask for another step's inputs.
    const inputs = (await services.backend.loadInputs([await dispatchOf(t)])).get(t.stepId);
    if (!inputs) throw new Error(`the backend read no inputs for step ${t.stepId}`);
    remember(loaded, t);
    return c.json(inputs);
  });

  app.post(`${TRY_PATH}/start`, limit(MAX_SMALL_BODY_BYTES), async (c) => {
    const t = await authorize(c);
    const body = await jsonBody(c, startBody);
    await services.backend.started([{ stepId: t.stepId, tryNumber: t.tryNumber, ...body }]);
    return c.json({ expiresAt: (await extend(t))?.toISOString() ?? null });
  });

  app.post(`${TRY_PATH}/heartbeat`, limit(MAX_SMALL_BODY_BYTES), async (c) => {
    const t = await authorize(c);
    await services.backend.heartbeat([{ stepId: t.stepId, tryNumber: t.tryNumber }]);
    return c.json({ expiresAt: (await extend(t))?.toISOString() ?? null });
  });

  app.post(`${TRY_PATH}/logs`, limit(MAX_LOG_CHUNK_BYTES), async (c) => {
    const t = await authorize(c);
    const { offset } = parse(logsQuery, c.req.query(), "query");
    const chunk = new Uint8Array(await c.req.arrayBuffer());
    const size = await appendShippedChunk(logFileOf(t), chunk, offset);
    return c.json({ size });
  });

  /**
   * Records ended tries in one backend call (one transaction), each as the per-try finish does: the
   * server measures a success's output, reads again the inputs of a try this process did not serve, and
   * copies each log to the object store before the tries are recorded as ended.
   */
  const recordFinishes = async (
    finishes: readonly { t: TokenTry; report: FinishReport }[],
  ): Promise<{ recorded: true; logObject: string | null }[]> => {
    const items = finishes.map(({ t, report }) => {
      const outcome: StepOutcome =
        // The server measures the output itself: the inline limit is its to apply.
        report.outcome.kind === "success" ? { ...report.outcome, sizeBytes: Buffer.byteLength(report.outcome.outputJson) } : report.outcome;
      return { t, report, outcome, logFile: logFileOf(t) };
    });
    const unread = items.filter((i) => !loaded.has(keyOf(i.t)) && needsInputs(i.outcome));
    if (unread.length > 0) await rehydrate(unread.map((i) => i.t));
    // Archived before the tries are recorded as ended: whoever sees one ended finds its log in the object store.
    const logObjects = await mapLimited(items, ARCHIVE_CONCURRENCY, (i) => archiveLog(i.t, i.logFile));
    await services.backend.finished(
      items.map(({ t, report, outcome, logFile }) => ({
        stepId: t.stepId,
        runId: t.runId,
        tryNumber: t.tryNumber,
        outcome,
        startedAt: report.startedAt,
        endedAt: report.endedAt,
        workerId: report.workerId,
        // The shipped copy on this server, where the live-log routes read it (never the worker's own path).
        logRef: logFile,
        ...(report.hostname !== undefined ? { hostname: report.hostname } : {}),
        ...(report.pid !== undefined ? { pid: report.pid } : {}),
      })),
      { freeSlots: 0 },
    );
    for (const i of items) loaded.delete(keyOf(i.t));
    return logObjects.map((logObject) => ({ recorded: true, logObject }));
  };

  const finish = async (c: Context, t: TokenTry, report: FinishReport) => {
    const [answer] = await recordFinishes([{ t, report }]);
    return c.json(answer);
  };

  /**
   * The backend keeps what a try read (lineage, data versions, whether it is
   * a check) from loadInputs to finished in memory. A finish reaching a
   * process that did not serve the try's inputs (a restart, another API
   * replica) reads them again first, so a check's verdict is never taken for
   * a materialisation; the lineage is then the upstreams' latest outputs.
   */
  const rehydrate = async (tries: readonly TokenTry[]) => {
    const { graph } = await services.graphs.current();
    await services.backend.loadInputs(tries.map((t) => tryDispatch(graph, t, logFileOf(t))));
  };

  /** Copies the ended try's log to the object store, so it outlives this server's disk; the file stays for the log routes. */
  const archiveLog = async (t: TokenTry, file: string): Promise<string | null> => {
    if (!services.outputStore) return null;
    try {
      const text = await readShippedLog(file);
      if (text === undefined) return null;
      return await services.outputStore.put(`logs/${t.runId}/${t.stepId}-${t.tryNumber}.log`, text);
    } catch (err) {
      process.stderr.write(
        `tributary: archiving the log of try ${t.tryNumber} of step ${t.stepId} failed (the file ${file} keeps it): ${(err as Error).message}\n`,
      );
      return null;
    }
  };

  app.post(`${TRY_PATH}/finish`, limit(MAX_FINISH_BODY_BYTES), async (c) => {
    const t = await authorize(c);
    return finish(c, t, await jsonBody(c, finishBody));
  });

  app.post(`${TRY_PATH}/defer`, limit(MAX_FINISH_BODY_BYTES), async (c) => {
    const t = await authorize(c);
    const { trigger, ...report } = await jsonBody(c, deferBody);
    return finish(c, t, { ...report, outcome: { kind: "deferred", trigger } });
  });

  app.post(`${TRY_PATH}/dynamic-partitions`, limit(MAX_SMALL_BODY_BYTES), async (c) => {
    await authorize(c);
    const { name, keys } = await jsonBody(c, dynamicPartitionsBody);
    await services.backend.addDynamicPartitions(name, keys);
    return c.json({ added: keys.length });
  });

  app.get(`${TRY_PATH}/materialized`, async (c) => {
    await authorize(c);
    const { asset, partition } = parse(materializedQuery, c.req.query(), "query");
    const latest = await services.backend.materialized(asset, partition);
    return c.json({ eventId: latest?.eventId ?? null });
  });

  /**
   * A batch call: every item's token is checked in one query, and the items
   * it accepts go to `apply` together (one backend call); a refused item is
   * answered with its status and writes nothing. `apply` returns each
   * accepted item's `value`, in order.
   */
  const batch = async <I extends BatchTry>(
    c: Context,
    schema: z.ZodType<{ tries: I[] }>,
    apply: (accepted: readonly { item: I; t: TokenTry }[]) => Promise<unknown[]>,
  ) => {
    const { tries } = await batchBody(c, schema);
    const checks =
      tries.length > 0
        ? await services.tokens.authenticateMany(
            tries.map((i) => i.token),
            clock(),
          )
        : [];
    const results: BatchItemResult[] = new Array(tries.length);
    const accepted: { index: number; item: I; t: TokenTry }[] = [];
    tries.forEach((item, index) => {
      const verdict = item.token === "" ? tokenMissing() : verdictOf(checks[index]!, item.stepId, item.tryNumber);
      if (verdict instanceof ExecutionApiError) {
        const status = verdict.status as BatchItemResult["status"];
        results[index] = {
          stepId: item.stepId,
          tryNumber: item.tryNumber,
          status,
          error: { code: verdict.code, message: verdict.message },
        };
      } else {
        accepted.push({ index, item, t: verdict });
      }
    });
    const values = accepted.length > 0 ? await apply(accepted) : [];
    accepted.forEach(({ index, item }, i) => {
      results[index] = { stepId: item.stepId, tryNumber: item.tryNumber, status: 200, value: values[i] };
    });
    return c.json({ results });
  };

  /** `{ expiresAt }` for each try, after one statement moved every token's expiry. */
  const extendAll = async (tries: readonly TokenTry[]) => {
    const ttl = services.tokenTtlMs === undefined ? [] : [services.tokenTtlMs];
    const extended = await services.tokens.extendMany(tries, clock(), ...ttl);
    return tries.map((t) => ({ expiresAt: extended.get(keyOf(t))?.toISOString() ?? null }));
  };

  app.post("/batch/inputs", limit(MAX_BATCH_BODY_BYTES), (c) =>
    batch(c, batchTriesBody, async (accepted) => {
      const { graph } = await services.graphs.current();
      const inputs = await services.backend.loadInputs(accepted.map(({ t }) => tryDispatch(graph, t, logFileOf(t))));
      return accepted.map(({ t }) => {
        const value = inputs.get(t.stepId);
        if (!value) throw new Error(`the backend read no inputs for step ${t.stepId}`);
        remember(loaded, t);
        return value;
      });
    }),
  );

  app.post("/batch/start", limit(MAX_BATCH_BODY_BYTES), (c) =>
    batch(c, batchStartBody, async (accepted) => {
      await services.backend.started(
        accepted.map(({ item, t }) => ({
          stepId: t.stepId,
          tryNumber: t.tryNumber,
          workerId: item.workerId,
          hostname: item.hostname,
          pid: item.pid,
          startedAt: item.startedAt,
        })),
      );
      return extendAll(accepted.map((a) => a.t));
    }),
  );

  app.post("/batch/heartbeat", limit(MAX_BATCH_BODY_BYTES), (c) =>
    batch(c, batchTriesBody, async (accepted) => {
      await services.backend.heartbeat(accepted.map(({ t }) => ({ stepId: t.stepId, tryNumber: t.tryNumber })));
      return extendAll(accepted.map((a) => a.t));
    }),
  );

  app.post("/batch/finish", limit(MAX_BATCH_FINISH_BODY_BYTES), (c) =>
    batch(c, batchFinishBody, (accepted) => recordFinishes(accepted.map(({ item, t }) => ({ t, report: item })))),
  );

  app.all("*", (c) => {
    throw new ExecutionApiError(
      404,
      "NOT_FOUND",
      `${c.req.method} ${new URL(c.req.url).pathname} is not part of /execution/v1 (see docs/execution-api.md)`,
    );
  });
  return app;
}

/** The dispatch the server's backend reads a try's inputs with, from the try's step row and the current definitions. */
export function tryDispatch(graph: AssetGraph, t: TokenTry, logRef: string): InputsRequest {
  const asset = graph.get(t.assetKey);
  const check = t.checkName === null ? undefined : graph.checksFor(t.assetKey).find((k) => k.name === t.checkName);
  return {
    stepId: t.stepId,
    runId: t.runId,
    tryNumber: t.tryNumber,
    assetKey: t.assetKey,
    partitionKey: t.partitionKey,
    mapIndex: t.mapIndex,
    partition: partitionInfo(asset?.partitions ?? null, t.partitionKey),
    // A check gone from the definitions still reads as a check (its step was planned as one).
    ...(t.checkName !== null
      ? { check: { name: t.checkName, blocking: check?.blocking ?? false, severity: check?.severity ?? "error" } }
      : {}),
    timeoutMs: t.timeoutMs,
    logRef,
  };
}

/** Outcomes whose recording uses what the try read (lineage, data versions, a check's identity, the partition window). */
function needsInputs(outcome: StepOutcome): boolean {
  return outcome.kind === "success" || outcome.kind === "expanded" || outcome.kind === "deferred";
}

const MAX_REMEMBERED = 100_000;

function remember(loaded: Set<string>, t: TokenTry): void {
  // Tries that never finish here (zombies, another replica) must not grow the set forever.
  if (loaded.size >= MAX_REMEMBERED) loaded.delete(loaded.values().next().value!);
  loaded.add(keyOf(t));
}

type FinishReport = z.infer<typeof finishBody>;

function tokenMissing(): ExecutionApiError {
  return new ExecutionApiError(401, "TOKEN_MISSING", "send the try's token as `Authorization: Bearer <token>` (the dispatch carries it)");
}

/**
 * The try a token lets its bearer report for, when that is try `tryNumber` of
 * step `stepId` and the try is still active; otherwise the refusal, checked in
 * this order: 401 unknown token, 403 another try's token, 409 the try is
 * over, 401 expired.
 */
function verdictOf(check: TokenCheck, stepId: number, tryNumber: number): TokenTry | ExecutionApiError {
  if (!check.ok && check.reason === "unknown") {
    return new ExecutionApiError(
      401,
      "TOKEN_INVALID",
      "the token is not one this server issued (or it was replaced by a newer dispatch of the try)",
    );
  }
  const scoped = check.try;
  if (scoped.stepId !== stepId || scoped.tryNumber !== tryNumber) {
    return new ExecutionApiError(
      403,
      "TOKEN_SCOPE",
      `the token is scoped to try ${scoped.tryNumber} of step ${scoped.stepId}, not try ${tryNumber} of step ${stepId}`,
    );
  }
  if (!check.ok && check.reason === "stale") {
    const where =
      check.stepTryNumber !== scoped.tryNumber
        ? `the step is at try ${check.stepTryNumber} (${check.stepState})`
        : `the try has ended (${check.stepState})`;
    return new ExecutionApiError(
      409,
      "TRY_NOT_ACTIVE",
      `stale: ${where}; try ${scoped.tryNumber} of step ${scoped.stepId} can no longer report, stop it`,
    );
  }
  if (!check.ok) {
    return new ExecutionApiError(401, "TOKEN_EXPIRED", `the token expired at ${check.expiredAt.toISOString()}: heartbeats keep it alive`);
  }
  return scoped;
}

/** `fn` over every item, at most `concurrency` at a time; the answers in the items' order. */
async function mapLimited<T, R>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane));
  return out;
}
